package comm_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
)

// MPI 3.1 §3.5 with every kind of receive mixed: receives for one source
// and tag, for AnySource, for AnyTag and for both, on two communicators,
// posted before and after their messages, in bursts long enough that the
// engine's queues switch to indexed matching (index.go), and matched in
// scrambled tag order. A reference model (matchModel) says which message
// each receive must get: a message matches the oldest posted receive that
// accepts it, a receive the oldest message that it accepts; Iprobe and
// Improbe must see that same oldest message.
func TestMatchOrderMixedWildcards(t *testing.T) {
	seeds := 8
	if testing.Short() {
		seeds = 2
	}
	for seed := 0; seed < seeds; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			script := matchScript(uint64(seed))
			runMatchScript(t, script)
		})
	}
}

// A step of a matching script: a send from a sender, or a receive,
// probe or matched probe by the receiver (rank 1).
type matchStep struct {
	kind string // "send", "recv", "iprobe", "improbe"
	rank int    // send: the sender (0 or 2); otherwise 1
	comm int    // 0: the world, 1: its Dup
	src  int    // receive side: 0, 2 or AnySource
	tag  int    // send: the tag; receive side: a tag or AnyTag
	id   int    // send: the message (its length is 8+id); receive side: the id of the message the model says it gets, -1 for none
}

// matchModel is MPI matching over plain slices.
type matchModel struct {
	posted []*matchStep // receives waiting, in posting order
	unexp  []*matchStep // messages waiting, in arrival order
	got    map[*matchStep]int
}

func accepts(r, m *matchStep) bool {
	return r.comm == m.comm && (r.src == comm.AnySource || r.src == m.rank) && (r.tag == comm.AnyTag || r.tag == m.tag)
}

// apply plays s and fills in, for a receive side step, the id it gets.
func (mm *matchModel) apply(s *matchStep) {
	switch s.kind {
	case "send":
		for i, r := range mm.posted {
			if accepts(r, s) {
				r.id = s.id
				mm.posted = append(mm.posted[:i], mm.posted[i+1:]...)
				return
			}
		}
		mm.unexp = append(mm.unexp, s)
	default:
		s.id = -1
		for i, m := range mm.unexp {
			if accepts(s, m) {
				s.id = m.id
				if s.kind != "iprobe" {
					mm.unexp = append(mm.unexp[:i], mm.unexp[i+1:]...)
				}
				return
			}
		}
		if s.kind == "recv" {
			mm.posted = append(mm.posted, s)
		}
	}
}

// The same through lanes (comm/internal/engine/lane.go): with no
// AnySource receive waiting, the receiver's windows arm its pairs' lanes
// while it waits for its turn outside mpgo, so the small messages (up to
// 1 KiB: the first 1,016 ids) wait in the lanes until a receive, a
// probe or a matched probe drains them; AnySource probes drain every
// lane and must still see the oldest arrival across the senders.
func TestMatchOrderThroughLanes(t *testing.T) {
	seeds := 6
	if testing.Short() {
		seeds = 2
	}
	var laned uint64
	for seed := 0; seed < seeds; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			laned += runMatchScript(t, matchScriptWild(uint64(seed)+100, false))
		})
	}
	if laned == 0 {
		t.Fatal("no message came through a lane")
	}
	t.Logf("%d messages came through lanes", laned)
}

// matchScript makes a random script: bursts of up to 300 receives and of
// up to 300 sends, the tags of a burst in scrambled order, probes between
// them, and at the end the sends and receives that leave nothing
// unmatched. The model fills in what each receive gets.
func matchScript(seed uint64) []*matchStep { return matchScriptWild(seed, true) }

// matchScriptWild is matchScript; without wild, no receive names
// AnySource (probes still do).
func matchScriptWild(seed uint64, wild bool) []*matchStep {
	rng := rand.New(rand.NewPCG(seed, 99))
	var script []*matchStep
	mm := &matchModel{}
	add := func(s *matchStep) {
		mm.apply(s)
		script = append(script, s)
	}
	id := 0
	pickSrc := func() int {
		switch rng.IntN(4) {
		case 0:
			return comm.AnySource
		case 1:
			return 2
		}
		return 0
	}
	for burst := 0; burst < 12; burst++ {
		n := 1 + rng.IntN(300)
		tags := rng.Perm(n)
		ntags := 1 + rng.IntN(n) // fewer tags than entries: some keys hold several
		if burst%2 == int(seed%2) {
			for _, tg := range tags {
				s := &matchStep{kind: "recv", rank: 1, comm: rng.IntN(2), src: pickSrc(), tag: tg % ntags}
				if !wild && s.src == comm.AnySource {
					s.src = 2
				}
				if rng.IntN(8) == 0 {
					s.tag = comm.AnyTag
				}
				add(s)
			}
		} else {
			for _, tg := range tags {
				add(&matchStep{kind: "send", rank: 2 * rng.IntN(2), comm: rng.IntN(2), tag: tg % ntags, id: id})
				id++
			}
		}
		for k := 0; k < 5; k++ {
			kind := "iprobe"
			if k%2 == 1 {
				kind = "improbe"
			}
			s := &matchStep{kind: kind, rank: 1, comm: rng.IntN(2), src: pickSrc(), tag: rng.IntN(ntags)}
			if rng.IntN(3) == 0 {
				s.tag = comm.AnyTag
			}
			add(s)
		}
	}
	// Close out: a message for every waiting receive, a receive for every
	// waiting message.
	for len(mm.posted) > 0 {
		r := mm.posted[0]
		s := &matchStep{kind: "send", rank: max(r.src, 0), comm: r.comm, tag: max(r.tag, 0), id: id}
		id++
		add(s)
	}
	for len(mm.unexp) > 0 {
		m := mm.unexp[0]
		add(&matchStep{kind: "recv", rank: 1, comm: m.comm, src: m.rank, tag: m.tag})
	}
	return script
}

// runMatchScript plays script on three goroutine ranks, one step at a
// time (each rank waits for its turn on a channel, outside mpgo), and
// checks that every receive, probe and matched probe got what the model
// says. It returns how many messages reached the receiver through lanes.
func runMatchScript(t *testing.T, script []*matchStep) uint64 {
	var laned atomic.Uint64
	turn := [3]chan int{make(chan int, 1), make(chan int, 1), make(chan int, 1)}
	quit := make(chan struct{}) // closed by a rank that fails: the others stop waiting for their turn
	var once sync.Once
	maxID := 0
	for _, s := range script {
		maxID = max(maxID, s.id)
	}
	pass := func(i int) { // hands step i to its rank (the end: nobody)
		if i < len(script) {
			turn[script[i].rank] <- i
		} else {
			for _, c := range turn {
				c <- -1
			}
		}
	}
	// The senders take their turns outside mpgo, so they must not wait
	// for their receives: the default eager buffer holds the whole script
	// (a few MiB); the option keeps MPGO_EAGER_BUFFER from shrinking it.
	run(t, 3, func(w *comm.Comm) (err error) {
		defer func() {
			if err != nil {
				once.Do(func() { close(quit) })
			}
		}()
		d, err := w.Dup()
		if err != nil {
			return err
		}
		cs := []*comm.Comm{w, d}
		me := w.Rank()
		if me == 0 {
			pass(0)
		}
		type pending struct {
			r    *comm.Request
			buf  []byte
			want int
		}
		var recvs []pending
		for {
			var i int
			select {
			case i = <-turn[me]:
			case <-quit:
				return nil
			}
			if i < 0 {
				break
			}
			s := script[i]
			c := cs[s.comm]
			switch s.kind {
			case "send":
				if err := c.Send(make([]byte, 8+s.id), comm.Byte, 1, s.tag); err != nil {
					return err
				}
			case "recv":
				buf := make([]byte, 8+maxID)
				r, err := c.Irecv(buf, comm.Byte, s.src, s.tag)
				if err != nil {
					return err
				}
				recvs = append(recvs, pending{r, buf, s.id})
			case "iprobe":
				st, ok, err := c.Iprobe(s.src, s.tag)
				if err != nil {
					return err
				}
				if got := probed(st, ok); got != s.id {
					return fmt.Errorf("step %d: Iprobe(%d, %d) saw message %d, want %d", i, s.src, s.tag, got, s.id)
				}
			case "improbe":
				m, st, ok, err := c.Improbe(s.src, s.tag)
				if err != nil {
					return err
				}
				if got := probed(st, ok); got != s.id {
					return fmt.Errorf("step %d: Improbe(%d, %d) took message %d, want %d", i, s.src, s.tag, got, s.id)
				}
				if ok {
					if _, err := c.Mrecv(m, make([]byte, st.Count), comm.Byte); err != nil {
						return err
					}
				}
			}
			pass(i + 1)
		}
		for k, p := range recvs {
			st, err := p.r.Wait()
			if err != nil {
				return err
			}
			if got := st.Count - 8; got != p.want {
				return fmt.Errorf("receive %d got message %d (from %d tag %d), want %d", k, got, st.Source, st.Tag, p.want)
			}
		}
		if me == 1 {
			laned.Store(comm.Laned(w, 0) + comm.Laned(w, 2))
		}
		return nil
	}, mpgo.WithEagerBuffer(comm.DefaultEagerBuffer))
	return laned.Load()
}

// probed is the id of the message a probe saw (its length less 8), -1 for
// none.
func probed(st comm.Status, ok bool) int {
	if !ok {
		return -1
	}
	return st.Count - 8
}
