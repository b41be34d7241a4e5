package trace

import (
	"testing"
	"time"
)

// A clock's ticks, scaled, measure what the runtime's clock measures.
func TestClockScale(t *testing.T) {
	c := NewClock()
	t0, n0 := c.Now(), nanotime()
	time.Sleep(20 * time.Millisecond)
	t1, n1 := c.Now(), nanotime()
	got := float64(t1-t0) * c.Scale()
	want := float64(n1 - n0)
	if got < want*0.95 || got > want*1.05 {
		t.Fatalf("20ms of ticks scaled to %.0f ns, the runtime's clock says %.0f (TSC: %v)", got, want, tickIsTSC)
	}
}
