package engine

// PrivilegedExecsWork tells the external tests (which need
// compose/images, and compose/images imports this package) whether c
// found that privileged execs work on its engine.
func PrivilegedExecsWork(c *Cluster) bool { return c.privOK }
