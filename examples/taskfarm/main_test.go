package main

import (
	"fmt"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestTaskfarm(t *testing.T) {
	tests := []struct {
		np     int
		n      int64
		tasks  int
		primes int64
	}{
		{1, 1000, 10, 168},
		{2, 100_000, 50, 9592},
		{4, 200_000, 200, 17984},
		{7, 50_000, 7, 5133},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("np=%d/n=%d/tasks=%d", tt.np, tt.n, tt.tasks), func(t *testing.T) {
			var out strings.Builder
			if err := run(tt.np, tt.n, tt.tasks, &out); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(out.String(), "\n")
			want := fmt.Sprintf("taskfarm: %d ranks, %d tasks, %d primes below %d ok", tt.np, tt.tasks, tt.primes, tt.n)
			if len(lines) != 3 || lines[0] != want || !strings.HasPrefix(lines[1], "taskfarm: tasks run per rank [") {
				t.Errorf("output %q, want %q and the tasks per rank", out.String(), want)
			}
		})
	}
}

func TestTaskfarmBadArgs(t *testing.T) {
	var out strings.Builder
	for _, a := range []struct {
		n     int64
		tasks int
	}{{1, 1}, {100, 0}, {10, 11}} {
		if err := run(2, a.n, a.tasks, &out); err == nil {
			t.Errorf("-n %d -tasks %d succeeded", a.n, a.tasks)
		}
	}
	if out.Len() != 0 {
		t.Errorf("wrote %q", out.String())
	}
}
