package engine

// ServerEnv is environment a fault asks every server started in a node to
// run with (the clock faults preload libfaketime this way). It lives on the
// Cluster, not in a fault, because servers are started by the backends —
// the first time and again after a kill — and each start must carry it.

// SetServerEnv makes every later server start in node (backends.StartDaemon)
// add env (KEY=VALUE) to the image's environment. nil clears it.
func (c *Cluster) SetServerEnv(node string, env []string) {
	c.startMu.Lock()
	defer c.startMu.Unlock()
	if c.serverEnv == nil {
		c.serverEnv = map[string][]string{}
	}
	if env == nil {
		delete(c.serverEnv, node)
		return
	}
	c.serverEnv[node] = append([]string(nil), env...)
}

// ServerEnv is the environment SetServerEnv gave node's servers (nil when
// none).
func (c *Cluster) ServerEnv(node string) []string {
	c.startMu.Lock()
	defer c.startMu.Unlock()
	return append([]string(nil), c.serverEnv[node]...)
}
