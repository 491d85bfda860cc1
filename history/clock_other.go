//go:build !unix

package history

// Monotonic is not available here: agents' readings are not used and the
// harness stamps every time itself.
func Monotonic() (int64, bool) { return 0, false }
