// Package clientconf is what the kubernetes backend's two sides must agree
// on about its built-in client: the check binary, which starts the API
// servers, makes the clients' spec and reports the election's settings,
// and the agent program check-kubernetes (package election), which runs
// client-go's leader election in the client containers. The durations
// derived from --lease-ttl and client-go's rate limit scaled with them, the
// Lease each key's election runs on, the API server each process speaks
// to and the secret's format live here, once, for both.
//
// It must never import client-go or anything of k8s.io: the check binary
// imports it, and client-go lives only in the agent program.
package clientconf

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Namespace holds the Leases, one per key (LeaseName).
const Namespace = "default"

// Timing is client-go's three leader-election durations.
type Timing struct {
	// LeaseDuration is how long a candidate waits, on its own monotonic
	// clock, after last seeing the Lease change before it takes the
	// Lease over.
	LeaseDuration time.Duration
	// RenewDeadline is how long the leader keeps retrying a renewal
	// before it gives up leading.
	RenewDeadline time.Duration
	// RetryPeriod is the wait between two tries (to acquire, to renew).
	RetryPeriod time.Duration
}

// TimingFor derives the durations from --lease-ttl in client-go's
// documented proportions, 15 s / 10 s / 2 s: LeaseDuration is the ttl,
// RenewDeadline two thirds of it, RetryPeriod two fifteenths (rounded
// down to the millisecond).
func TimingFor(ttl time.Duration) Timing {
	ms := func(d time.Duration) time.Duration { return d.Truncate(time.Millisecond) }
	return Timing{LeaseDuration: ttl, RenewDeadline: ms(ttl * 10 / 15), RetryPeriod: ms(ttl * 2 / 15)}
}

func (t Timing) String() string {
	return fmt.Sprintf("client-go tools/leaderelection, LeaseLock, ReleaseOnCancel; LeaseDuration %s, RenewDeadline %s, RetryPeriod %s (15/10/2 of --lease-ttl); client rate limit %.0f/s, burst %d",
		t.LeaseDuration, t.RenewDeadline, t.RetryPeriod, t.QPS(), t.Burst())
}

// client-go's default client-side rate limit (rest.Config QPS and Burst
// left zero), at its default RetryPeriod of 2 s.
const (
	defaultQPS         = 5
	defaultBurst       = 10
	defaultRetryPeriod = 2 * time.Second
)

// RateScale is how many times more often than at client-go's defaults
// the timing retries (at least 1).
func (t Timing) RateScale() float64 {
	return max(1, float64(defaultRetryPeriod)/float64(t.RetryPeriod))
}

// QPS and Burst are client-go's default client-side rate (5 requests/s,
// bursts of 10) scaled as the durations are: a lease shorter than 15 s
// retries and renews more often, and the limiter must not be what makes a
// leader miss its renewals.
func (t Timing) QPS() float64 { return defaultQPS * t.RateScale() }

// Burst: see QPS.
func (t Timing) Burst() int { return int(defaultBurst * t.RateScale()) }

// LeaseName is the Lease that key's election runs on: a DNS subdomain
// name, which a key need not be.
func LeaseName(key string) string {
	var b strings.Builder
	b.WriteString("fencecheck-")
	for _, r := range strings.ToLower(key) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '.':
			b.WriteRune(r)
		default:
			fmt.Fprintf(&b, "-%x-", r)
		}
	}
	return strings.TrimRight(b.String(), "-.")
}

// APIServerFor is the API server client process speaks to: endpoint
// process mod their count. client-go's rest.Config has one Host, so a
// client cannot spread its calls or fail over; the processes spread
// instead.
func APIServerFor(endpoints []string, process int) (string, error) {
	if len(endpoints) == 0 {
		return "", errors.New("kubernetes: the client needs an API server's URL, and none was given")
	}
	i := process % len(endpoints)
	if i < 0 {
		i += len(endpoints)
	}
	return endpoints[i], nil
}

// Secret is ClientSpec.ServiceSecret's content: the bearer token and the
// certificates to trust (every API server's, one PEM after another).
type Secret struct {
	Token string `json:"token"`
	CA    string `json:"ca"`
}

// Encode is the secret as ClientSpec.ServiceSecret carries it.
func (s Secret) Encode() string {
	b, _ := json.Marshal(s)
	return string(b)
}

// ParseSecret reads ClientSpec.ServiceSecret; both parts must be there.
func ParseSecret(secret string) (Secret, error) {
	var s Secret
	if err := json.Unmarshal([]byte(secret), &s); err != nil || s.Token == "" || s.CA == "" {
		return Secret{}, errors.New("kubernetes: the client spec carries no API server token and certificate (service_secret)")
	}
	return s, nil
}
