//go:build !unix

package lockclient

// Monotonic is not available here: a client's readings are not used and
// the harness stamps every time itself.
func Monotonic() (ns int64, ok bool) { return 0, false }
