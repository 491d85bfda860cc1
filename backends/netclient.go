package backends

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/fencecheck/fencecheck/lockclient"
)

// HTTPError is a JSON error body of the small HTTP services fencecheck runs
// in its nodes (lockd, storage).
type HTTPError struct {
	Error string `json:"error"`
	// Definite: the server certainly did not apply the request.
	Definite bool `json:"definite"`
}

// PostJSON sends in to url and decodes the answer into out. Errors keep
// the honest outcome: a connection that was never made is a definite
// failure (nothing was sent); a timeout or a connection lost after sending
// is unknown; a server error is whatever the server says it is.
func PostJSON(ctx context.Context, hc *http.Client, url string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return lockclient.Fail(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return lockclient.Fail(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if dl, ok := ctx.Deadline(); ok {
		// Let the server give up first, so it can answer "not done"
		// instead of leaving the client guessing.
		req.Header.Set("X-Deadline-Ms", fmt.Sprint(time.Until(dl).Milliseconds()))
	}
	resp, err := hc.Do(req)
	if err != nil {
		if NeverSent(err) {
			return lockclient.Fail(err)
		}
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("reading the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var he HTTPError
		if json.Unmarshal(data, &he) != nil || he.Error == "" {
			return fmt.Errorf("server answered %s", resp.Status)
		}
		if he.Error == lockclient.ErrorFenced {
			return lockclient.ErrFenced
		}
		if he.Definite {
			return lockclient.Fail(errors.New(he.Error))
		}
		return errors.New(he.Error)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("malformed answer from %s: %w", url, err)
	}
	return nil
}

// NeverSent reports whether err happened before any byte of the request
// could reach the server: the connection was refused or could not be made.
func NeverSent(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}

// ServerDeadline is the context a server handler should use: the client's
// deadline less a margin for the answer to travel back.
func ServerDeadline(r *http.Request) (context.Context, context.CancelFunc) {
	var ms int64
	if _, err := fmt.Sscan(r.Header.Get("X-Deadline-Ms"), &ms); err == nil && ms > 0 {
		d := time.Duration(ms) * time.Millisecond
		return context.WithTimeout(r.Context(), d-min(d/10, 200*time.Millisecond))
	}
	return context.WithCancel(r.Context())
}

// HandleJSON serves POST pattern on mux for the small HTTP services
// fencecheck runs in its nodes: it decodes the JSON body into a Req and
// answers with f's value or error (see WriteJSON). A body that does not
// decode is answered with bad(err), which must be a definite failure:
// nothing was applied, so the client may say so.
func HandleJSON[Req any](mux *http.ServeMux, pattern string, bad func(error) error, f func(*http.Request, Req) (any, error)) {
	mux.HandleFunc("POST "+pattern, func(w http.ResponseWriter, r *http.Request) {
		var req Req
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			WriteJSON(w, nil, bad(err))
			return
		}
		v, err := f(r, req)
		WriteJSON(w, v, err)
	})
}

// WriteJSON answers a request with v, or with err as an HTTPError.
func WriteJSON(w http.ResponseWriter, v any, err error) {
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		typ, _ := lockclient.Outcome(err)
		he := HTTPError{Error: err.Error(), Definite: typ == lockclient.TypeFail}
		w.WriteHeader(http.StatusConflict)
		json.NewEncoder(w).Encode(he)
		return
	}
	json.NewEncoder(w).Encode(v)
}
