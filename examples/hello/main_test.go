package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mpgo/mpgo/comm"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestHello(t *testing.T) {
	for _, np := range []int{1, 3, 16} {
		t.Run(fmt.Sprint("np=", np), func(t *testing.T) {
			var out strings.Builder
			if err := run(np, &out); err != nil {
				t.Fatal(err)
			}
			var want strings.Builder
			for r := range np {
				fmt.Fprintf(&want, "hello from rank %d of %d\n", r, np)
			}
			want.WriteString("ok\n")
			if got := out.String(); got != want.String() {
				t.Errorf("output:\n%s\nwant:\n%s", got, want.String())
			}
		})
	}
}

func TestHelloNoRanks(t *testing.T) {
	var out strings.Builder
	err := run(0, &out)
	if !errors.Is(err, comm.ErrArg) {
		t.Errorf("run(0) = %v, want an error wrapping comm.ErrArg", err)
	}
	if out.Len() != 0 {
		t.Errorf("run(0) wrote %q", out.String())
	}
}
