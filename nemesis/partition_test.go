package nemesis

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/history"
)

func nodeNames(n int) []string {
	var out []string
	for i := 1; i <= n; i++ {
		out = append(out, "n"+string(rune('0'+i)))
	}
	return out
}

// sees is what each node still reaches under g.
func sees(g Grudge, nodes []string) map[string][]string {
	out := map[string][]string{}
	for _, a := range nodes {
		for _, b := range nodes {
			if !slices.Contains(g[a], b) {
				out[a] = append(out[a], b)
			}
		}
	}
	return out
}

func symmetric(t *testing.T, g Grudge) {
	t.Helper()
	for a, bs := range g {
		for _, b := range bs {
			if a == b {
				t.Errorf("%s holds a grudge against itself", a)
			}
			if !slices.Contains(g[b], a) {
				t.Errorf("%s drops %s but not the other way", a, b)
			}
		}
	}
}

func TestShapes(t *testing.T) {
	for _, n := range []int{3, 4, 5, 6, 7, 9} {
		nodes := nodeNames(n)
		for seed := range uint64(50) {
			rng := rand.New(rand.NewPCG(seed, 1))
			for _, s := range ServerShapes {
				g, order, err := s.Grudge(rng, nodes, nodes[seed%uint64(n)], "", "storage")
				if err != nil {
					t.Fatalf("%s on %d: %v", s, n, err)
				}
				symmetric(t, g)
				if len(g) == 0 {
					t.Fatalf("%s on %d nodes cuts nothing", s, n)
				}
				v := sees(g, nodes)
				switch s {
				case IsolateOne, IsolatePrimary:
					if len(v[order[0]]) != 1 {
						t.Errorf("%s: %s still sees %v", s, order[0], v[order[0]])
					}
					if s == IsolatePrimary && order[0] != nodes[seed%uint64(n)] {
						t.Errorf("isolated %s, not the primary", order[0])
					}
				case Halves:
					small := order[:n/2]
					for _, a := range small {
						if len(v[a]) != n/2 {
							t.Errorf("halves: %s sees %v", a, v[a])
						}
					}
				case Bridge:
					bridge := order[len(order)-1]
					if len(v[bridge]) != n {
						t.Errorf("bridge %s sees only %v", bridge, v[bridge])
					}
				case Ring:
					seen := map[string]bool{}
					for _, a := range nodes {
						if len(v[a]) < n/2+1 {
							t.Errorf("ring on %d: %s sees %v, not a majority", n, a, v[a])
						}
						k := slices.Clone(v[a])
						slices.Sort(k)
						key := ""
						for _, x := range k {
							key += x + ","
						}
						if seen[key] {
							t.Errorf("ring on %d: two nodes see the same majority %s", n, key)
						}
						seen[key] = true
					}
					if n == 5 {
						for _, a := range nodes {
							if len(v[a]) != 3 {
								t.Errorf("perfect ring: %s sees %v", a, v[a])
							}
						}
					}
				}
			}
		}
	}
}

func TestClientShapes(t *testing.T) {
	nodes := nodeNames(3)
	rng := rand.New(rand.NewPCG(1, 1))
	g, order, err := ClientFromServers.Grudge(rng, nodes, "", "c2", "storage")
	if err != nil {
		t.Fatal(err)
	}
	symmetric(t, g)
	if !slices.Equal(order, []string{"c2", "n1", "n2", "n3"}) || len(g["c2"]) != 3 || slices.Contains(g["c2"], "storage") {
		t.Errorf("client from servers: %v, %v", order, g)
	}
	g, order, err = ClientFromStorage.Grudge(rng, nodes, "", "c2", "storage")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(order, []string{"c2", "storage"}) || !slices.Equal(g["c2"], []string{"storage"}) || len(g) != 2 {
		t.Errorf("client from storage: %v, %v", order, g)
	}
	// Nobody holds a lease: nothing to cut.
	if g, _, _ := ClientFromServers.Grudge(rng, nodes, "", "", "storage"); len(g) != 0 {
		t.Errorf("no holder, yet %v", g)
	}
}

func TestHolders(t *testing.T) {
	h := &Holders{SlotOf: func(p int) string { return "c" + string(rune('0'+p%2+1)) }}
	ev := func(i int64, p int, typ history.Type, f, errText string) {
		h.Observe(history.Event{Index: i, Process: p, Type: typ, F: f, Error: errText})
	}
	if _, ok := h.Current(); ok {
		t.Fatal("a holder before any acquire")
	}
	got := make(chan string, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		got <- h.Wait(ctx)
	}()
	ev(0, 0, history.Invoke, history.Acquire, "")
	ev(1, 0, history.OK, history.Acquire, "")
	if s := <-got; s != "c1" {
		t.Fatalf("Wait = %q, want c1", s)
	}
	ev(2, 1, history.Invoke, history.Acquire, "")
	ev(3, 1, history.OK, history.Acquire, "") // a second key's holder
	if s, _ := h.Current(); s != "c2" {
		t.Errorf("Current = %q, want the latest holder c2", s)
	}
	ev(4, 1, history.Invoke, history.Release, "")
	if s, _ := h.Current(); s != "c1" {
		t.Errorf("after c2's release Current = %q, want c1", s)
	}
	ev(5, 0, history.Invoke, history.Write, "")
	ev(6, 0, history.Info, history.Write, "")
	if s, ok := h.Current(); ok {
		t.Errorf("after the holder's info Current = %q", s)
	}
	ev(7, 3, history.OK, history.Acquire, "")
	ev(8, 3, history.Fail, history.Read, "lease-lost")
	if s, ok := h.Current(); ok {
		t.Errorf("after lease-lost Current = %q", s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if s := h.Wait(ctx); s != "" {
		t.Errorf("Wait with nobody holding = %q", s)
	}
}

// The split brain: the primary and some clients on one side, the other
// servers and the rest of the clients on the other, each side whole, the
// storage cut from nobody.
func TestPrimaryWithClientsSplitsServersAndClients(t *testing.T) {
	servers := nodeNames(3)
	clients := []string{"c1", "c2", "c3", "c4", "c5"}
	for seed := range uint64(20) {
		g, order, err := primarySide(rand.New(rand.NewPCG(seed, 1)), servers, clients, "n2")
		if err != nil {
			t.Fatal(err)
		}
		symmetric(t, g)
		if order[0] != "n2" || len(order) != 8 {
			t.Fatalf("order %v", order)
		}
		side := order[:3] // n2 and half of five clients: two
		for _, a := range order {
			for _, b := range order {
				cut := slices.Contains(g[a], b)
				if same := slices.Contains(side, a) == slices.Contains(side, b); cut == same {
					t.Errorf("seed %d: %s and %s cut %v, same side %v (side %v)", seed, a, b, cut, same, side)
				}
			}
		}
		if _, ok := g["storage"]; ok {
			t.Errorf("the storage is cut")
		}
	}
	if _, _, err := primarySide(rand.New(rand.NewPCG(1, 1)), servers, clients, "n9"); err == nil {
		t.Errorf("a primary that is no server was accepted")
	}
	if g, _, _ := primarySide(rand.New(rand.NewPCG(1, 1)), servers, []string{"c1"}, "n1"); !slices.Contains(g["c1"], "n2") || slices.Contains(g["c1"], "n1") {
		t.Errorf("one client: it goes with the primary: %v", g)
	}
}
