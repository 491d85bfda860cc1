package memory

import (
	"context"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/fenced"
	"github.com/fencecheck/fencecheck/history"
)

// InProcess is the whole system under test in one process: the lease
// service, the fenced storage and one freezable slot per client. Slots are
// named c1..cN, as the client containers are in Docker.
type InProcess struct {
	Service *Service
	Store   *fenced.Store
	// Delay is the clients' one-way network delay (NetworkDelay unless
	// set; benchmarks of the harness itself set it to 0).
	Delay time.Duration

	mu    sync.Mutex
	gates map[string]*Gate
}

// NewInProcess makes the service with lease ttl and the storage in mode.
func NewInProcess(ttl time.Duration, mode fenced.Mode) *InProcess {
	return &InProcess{Service: NewService(ttl), Store: fenced.NewStore(mode), Delay: NetworkDelay, gates: map[string]*Gate{}}
}

func (s *InProcess) gate(name string) *Gate {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.gates[name]
	if g == nil {
		g = &Gate{}
		s.gates[name] = g
	}
	return g
}

// NewClient opens a client in slot (1-based); every client of a slot shares
// its gate, as every process in a container shares its freezer.
func (s *InProcess) NewClient(_ context.Context, slot int) (backends.Client, error) {
	return NewClient(s.Service, s.Store, s.Service.TTL(), s.gate(history.SlotName(slot))).WithNetworkDelay(s.Delay), nil
}

// Freeze stops every client in the slot named target.
func (s *InProcess) Freeze(_ context.Context, target string) error {
	s.gate(target).Freeze()
	return nil
}

// Thaw resumes the slot named target.
func (s *InProcess) Thaw(_ context.Context, target string) error {
	s.gate(target).Thaw()
	return nil
}

// ThawAll resumes every slot.
func (s *InProcess) ThawAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, g := range s.gates {
		g.Thaw()
	}
}

// Info describes the system for the report.
func (s *InProcess) Info() map[string]string {
	return map[string]string{"lock service": "memory lease service (in process)", "storage node": "fenced store (in process), fencing " + string(s.Store.Mode())}
}

// ServerVersion is the lock service's version: this process's build.
func (s *InProcess) ServerVersion() backends.ServerVersion { return BuildVersion() }

// Close resumes every slot; nothing else outlives the run.
func (s *InProcess) Close(context.Context) error {
	s.ThawAll()
	return nil
}
