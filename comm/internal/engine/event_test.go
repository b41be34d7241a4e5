package engine

import (
	"sync"
	"testing"
)

// An event wakes every goroutine that sleeps on it, whether it fires
// before, while or after they arrive, and leaves its mutex unlocked.
func TestEventWakesEverySleeper(t *testing.T) {
	for sleepers := 1; sleepers <= 8; sleepers++ {
		for round := 0; round < 200; round++ {
			var e event
			var wg sync.WaitGroup
			wg.Add(sleepers)
			for range sleepers {
				go func() {
					defer wg.Done()
					e.sleep()
					if !e.fired() {
						t.Error("woke before fire")
					}
				}()
			}
			if round%3 == 0 {
				e.fire()
			} else {
				go e.fire()
			}
			wg.Wait()
			if !e.mu.TryLock() {
				t.Fatalf("%d sleepers: mutex left locked", sleepers)
			}
		}
	}
}

// A pooled event (wake set) serves one waiter per arming, round after
// round.
func TestEventRearm(t *testing.T) {
	e := event{wake: make(chan struct{}, 1)}
	for round := 0; round < 1000; round++ {
		done := make(chan struct{})
		go func() {
			e.sleep()
			close(done)
		}()
		e.fire()
		<-done
		if !e.fired() {
			t.Fatal("not fired")
		}
		e.rearm()
	}
	if len(e.wake) != 0 {
		t.Fatal("a wake-up left over")
	}
}
