package lockclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"syscall"
	"time"
)

// FencedStorage is the fenced storage node's HTTP API (docs/client-protocol.md,
// "The fenced storage"), for a Go client that writes there: POST /read and
// POST /write, each answer turned into the error the op's outcome needs.
// A request never sent (connection refused) and a refusal the storage says
// is definite are Fail; a refused token is ErrFenced; anything else (a
// timeout, a cut connection, an answer that cannot be read) may have been
// applied, so it is returned as is and the op's outcome is unknown.
type FencedStorage struct {
	URL  string // init.Storage.URL
	HTTP *http.Client
}

// Read returns key's value, as the holder of token.
func (s *FencedStorage) Read(ctx context.Context, key string, token uint64) (int64, error) {
	return s.post(ctx, "/read", key, token, 0)
}

// ReadLockFree returns key's value to a reader that holds no lock: POST
// /read-lock-free, no token presented, never refused as stale.
func (s *FencedStorage) ReadLockFree(ctx context.Context, key string) (int64, error) {
	return s.post(ctx, "/read-lock-free", key, 0, 0)
}

// Write sets key to value, as the holder of token.
func (s *FencedStorage) Write(ctx context.Context, key string, token uint64, value int64) error {
	_, err := s.post(ctx, "/write", key, token, value)
	return err
}

func (s *FencedStorage) post(ctx context.Context, path, key string, token uint64, value int64) (int64, error) {
	body, err := json.Marshal(map[string]any{"key": key, "token": token, "value": value})
	if err != nil {
		return 0, Fail(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+path, bytes.NewReader(body))
	if err != nil {
		return 0, Fail(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if dl, ok := ctx.Deadline(); ok {
		// The storage gives up when the client does.
		req.Header.Set("X-Deadline-Ms", fmt.Sprint(time.Until(dl).Milliseconds()))
	}
	hc := s.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			return 0, Fail(err) // never sent
		}
		return 0, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var ans struct {
		Value    int64  `json:"value"`
		Error    string `json:"error"`
		Definite bool   `json:"definite"`
	}
	jerr := json.Unmarshal(b, &ans)
	switch {
	case resp.StatusCode == http.StatusOK && jerr == nil:
		return ans.Value, nil
	case ans.Error == ErrorFenced:
		return 0, ErrFenced
	case ans.Definite:
		return 0, Failf("storage: %s", ans.Error)
	}
	return 0, fmt.Errorf("storage answered %s: %s", resp.Status, b)
}
