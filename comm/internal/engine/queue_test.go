package engine

import (
	"math/rand/v2"
	"testing"
)

// The fifo against a plain slice: random pushes and removals anywhere keep
// the same order, across the ring and its overflow.
func TestFifoMatchesSliceModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var q fifo[int]
	var model []int
	next := 0
	for step := 0; step < 20000; step++ {
		if len(model) == 0 || rng.IntN(100) < 55 {
			q.push(next)
			model = append(model, next)
			next++
		} else {
			i := rng.IntN(len(model))
			if rng.IntN(3) == 0 {
				i = 0 // the common case: the oldest
			}
			if got := q.remove(i); got != model[i] {
				t.Fatalf("step %d: remove(%d) = %d, want %d", step, i, got, model[i])
			}
			model = append(model[:i], model[i+1:]...)
		}
		if q.len() != len(model) {
			t.Fatalf("step %d: len %d, want %d", step, q.len(), len(model))
		}
		if step%97 == 0 {
			for i, v := range model {
				if q.at(i) != v {
					t.Fatalf("step %d: at(%d) = %d, want %d", step, i, q.at(i), v)
				}
			}
		}
	}
}

// Removed slots are cleared, so a queue keeps nothing alive.
func TestFifoClearsSlots(t *testing.T) {
	var q fifo[*int]
	for i := 0; i < 3*ringLen; i++ {
		q.push(new(int))
	}
	for q.len() > 0 {
		q.remove(q.len() / 2)
	}
	for i, p := range q.ring {
		if p != nil {
			t.Errorf("ring slot %d still set", i)
		}
	}
	for i, p := range q.over[:cap(q.over)] {
		if p != nil {
			t.Errorf("overflow slot %d still set", i)
		}
	}
}
