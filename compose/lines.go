package compose

import (
	"bytes"
	"io"
	"sync"
)

// lineSink lets steps that run side by side share one progress writer
// without cutting each other's lines in half: each step writes through its
// own writer, which passes on whole lines only.
type lineSink struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *lineSink) writer() *lineWriter { return &lineWriter{sink: s} }

// lineWriter buffers a step's output up to the end of each line. It may
// be written from several goroutines (a command's stdout and stderr).
type lineWriter struct {
	sink *lineSink
	buf  []byte
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.sink.mu.Lock()
	defer l.sink.mu.Unlock()
	l.buf = append(l.buf, p...)
	if i := bytes.LastIndexByte(l.buf, '\n'); i >= 0 {
		l.flush(l.buf[:i+1])
		l.buf = append(l.buf[:0], l.buf[i+1:]...)
	}
	return len(p), nil
}

// Close passes on what is left of an unfinished last line.
func (l *lineWriter) Close() error {
	l.sink.mu.Lock()
	defer l.sink.mu.Unlock()
	if len(l.buf) > 0 {
		l.flush(append(l.buf, '\n'))
		l.buf = nil
	}
	return nil
}

// flush writes b whole; the caller holds the sink's lock.
func (l *lineWriter) flush(b []byte) { l.sink.w.Write(b) }
