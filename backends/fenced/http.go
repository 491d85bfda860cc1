package fenced

import (
	"context"
	"errors"
	"net/http"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/internal/jsonerr"
	"github.com/fencecheck/fencecheck/lockclient"
)

type request struct {
	Key   string `json:"key"`
	Token uint64 `json:"token"`
	Value int64  `json:"value"`
}

type answer struct {
	Value int64 `json:"value"`
}

// Handler serves a Store over HTTP: POST /read, POST /write and POST
// /read-lock-free (a read that presents no token) with a JSON body. It is what `check storage` runs in the storage node, so the
// storage can be partitioned and paused like any node.
func Handler(s *Store) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		backends.WriteJSON(w, map[string]string{"fencing": string(s.Mode())}, nil)
	})
	backends.HandleJSON(mux, "/read", badRequest, func(r *http.Request, req request) (any, error) {
		v, err := s.Read(r.Context(), req.Key, req.Token)
		return answer{Value: v}, err
	})
	backends.HandleJSON(mux, "/read-lock-free", badRequest, func(r *http.Request, req request) (any, error) {
		v, err := s.ReadLockFree(r.Context(), req.Key)
		return answer{Value: v}, err
	})
	backends.HandleJSON(mux, "/write", badRequest, func(r *http.Request, req request) (any, error) {
		return answer{}, s.Write(r.Context(), req.Key, req.Token, req.Value)
	})
	return mux
}

// Remote is a Store across the network.
type Remote struct {
	URL    string // e.g. http://storage:7001
	Client *http.Client
}

func (r *Remote) Read(ctx context.Context, key string, token uint64) (int64, error) {
	var a answer
	err := backends.PostJSON(ctx, r.Client, r.URL+"/read", request{Key: key, Token: token}, &a)
	return a.Value, err
}

func (r *Remote) ReadLockFree(ctx context.Context, key string) (int64, error) {
	var a answer
	err := backends.PostJSON(ctx, r.Client, r.URL+"/read-lock-free", request{Key: key}, &a)
	return a.Value, err
}

func (r *Remote) Write(ctx context.Context, key string, token uint64, value int64) error {
	return backends.PostJSON(ctx, r.Client, r.URL+"/write", request{Key: key, Token: token, Value: value}, nil)
}

// Port is where `check storage` listens in the storage node.
const Port = 7001

// badRequest is a request body that is not the JSON the API takes, said in
// plain words (a user's client sends it; docs/client-protocol.md).
func badRequest(err error) error {
	return lockclient.Fail(errors.New("the request body: " + jsonerr.Message(nil, err) + ` (want {"key": "k0", "token": 7} to read, with "value": 8 to write)`))
}
