package memory

import (
	"context"
	"errors"
	"net/http"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/internal/buildinfo"
	"github.com/fencecheck/fencecheck/lockclient"
)

type lockRequest struct {
	Key   string `json:"key"`
	Token uint64 `json:"token,omitempty"`
}

type lockAnswer struct {
	Token uint64 `json:"token"`
}

// Handler serves the lease service over HTTP (`check lockd`): POST
// /acquire blocks until granted or the client's deadline; /renew and
// /release answer at once.
func Handler(s *Service) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		backends.WriteJSON(w, map[string]string{"lease_ttl": s.TTL().String()}, nil)
	})
	// What a run records as the server's version: the fencecheck build
	// `check lockd` is.
	mux.HandleFunc("GET /version", func(w http.ResponseWriter, r *http.Request) {
		backends.WriteJSON(w, BuildVersion(), nil)
	})
	handle := func(path string, f func(ctx context.Context, req lockRequest) (uint64, error)) {
		backends.HandleJSON(mux, path, lockclient.Fail, func(r *http.Request, req lockRequest) (any, error) {
			ctx, cancel := backends.ServerDeadline(r)
			defer cancel()
			t, err := f(ctx, req)
			if errors.Is(err, ErrNotHolder) {
				err = lockclient.Fail(err)
			}
			return lockAnswer{Token: t}, err
		})
	}
	handle("/acquire", func(ctx context.Context, req lockRequest) (uint64, error) { return s.Acquire(ctx, req.Key) })
	handle("/renew", func(ctx context.Context, req lockRequest) (uint64, error) { return 0, s.Renew(ctx, req.Key, req.Token) })
	handle("/release", func(ctx context.Context, req lockRequest) (uint64, error) {
		return 0, s.Release(ctx, req.Key, req.Token)
	})
	return mux
}

// BuildVersion is this process's answer to "what are you?": the
// fencecheck build, verbatim and in short.
func BuildVersion() backends.ServerVersion {
	return backends.ServerVersion{Answer: buildinfo.Version(), Version: buildinfo.Short()}
}

// Remote is the lease service across the network.
type Remote struct {
	URL    string // e.g. http://n1:7000
	Client *http.Client
}

func (r *Remote) Acquire(ctx context.Context, key string) (uint64, error) {
	var a lockAnswer
	err := backends.PostJSON(ctx, r.Client, r.URL+"/acquire", lockRequest{Key: key}, &a)
	return a.Token, err
}

func (r *Remote) Renew(ctx context.Context, key string, token uint64) error {
	return notHolder(backends.PostJSON(ctx, r.Client, r.URL+"/renew", lockRequest{Key: key, Token: token}, nil))
}

func (r *Remote) Release(ctx context.Context, key string, token uint64) error {
	return notHolder(backends.PostJSON(ctx, r.Client, r.URL+"/release", lockRequest{Key: key, Token: token}, nil))
}

// notHolder turns the server's answer back into ErrNotHolder, which the
// keepalive acts on.
func notHolder(err error) error {
	if err != nil && err.Error() == ErrNotHolder.Error() {
		return ErrNotHolder
	}
	return err
}
