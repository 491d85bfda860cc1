// Package lines cuts a stream that arrives in pieces into whole lines, for
// the writers that pass a tool's output on one line at a time: an image
// build's steps, the progress of tests side by side, a test's log. It
// holds only the one unfinished line; it never locks, writes or drops
// anything itself: what a line becomes is its caller's.
package lines

import "bytes"

// Splitter holds the unfinished line of one stream; the zero value is an
// empty one. It is not safe for concurrent use: its caller's lock, if any,
// covers it.
type Splitter struct {
	partial []byte
}

// Write adds p to the stream and calls each with every line p completes,
// without its newline or trailing carriage returns (a Windows line end
// or a tool's progress line), in order. It stops at each's first error
// and returns it; the line that failed is gone either way.
func (s *Splitter) Write(p []byte, each func(line string) error) error {
	s.partial = append(s.partial, p...)
	for {
		i := bytes.IndexByte(s.partial, '\n')
		if i < 0 {
			return nil
		}
		line := string(bytes.TrimRight(s.partial[:i], "\r"))
		s.partial = s.partial[i+1:]
		if err := each(line); err != nil {
			return err
		}
	}
}

// Rest returns the unfinished line, trailing carriage returns trimmed,
// and forgets it: for a stream that ended without a newline. ok is false
// when nothing was left.
func (s *Splitter) Rest() (line string, ok bool) {
	if len(s.partial) == 0 {
		return "", false
	}
	line = string(bytes.TrimRight(s.partial, "\r"))
	s.partial = nil
	return line, true
}
