package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
)

// tailBytes is how much of a history's end Ended reads: far more than
// one line (real events are under 300 bytes).
const tailBytes = 64 << 10

// Ended reports whether the history in file name of fsys ends with the
// end event, reading only its last line — a cheap test for a page that
// lists many runs (check serve's index, check compare merge). It does not
// validate the history or look for ops left open: Load does that. A
// missing file is an error (fs.ErrNotExist).
func Ended(fsys fs.FS, name string) (bool, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return false, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return false, err
	}
	var tail []byte
	if ra, ok := f.(io.ReaderAt); ok {
		n := min(st.Size(), tailBytes)
		tail = make([]byte, n)
		if _, err := ra.ReadAt(tail, st.Size()-n); err != nil && !errors.Is(err, io.EOF) {
			return false, err
		}
	} else {
		b, err := io.ReadAll(f)
		if err != nil {
			return false, err
		}
		tail = b[max(0, len(b)-tailBytes):]
	}
	return endsWithEnd(tail), nil
}

// endsWithEnd reports whether the last non-blank line of b is a complete
// end event.
func endsWithEnd(b []byte) bool {
	b = bytes.TrimRight(b, " \t\r\n")
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[i+1:]
	}
	var e Event
	return len(b) > 0 && json.Unmarshal(b, &e) == nil && e.Type == End
}
