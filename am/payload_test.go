package am_test

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/am"
	"github.com/mpgo/mpgo/comm"
)

func runErr(n int, fn func(w *comm.Comm) error) error { return mpgo.Run(n, fn) }

type point struct {
	X, Y float64
	N    int32
}

type pair struct {
	A int16
	B float32
}

type node struct {
	Name string
	Next *node
}

// Requests and responses of every kind of type, between every pair of
// ranks: in one process by reference, between processes as memory (fixed
// sizes, slices of them, strings) or gob (the rest).
func TestPayloads(t *testing.T) {
	onJobs(t, func(w *comm.Comm) error {
		ep, err := am.New(w, am.WithWindow(3))
		if err != nil {
			return err
		}
		checks, err := payloadHandlers(ep)
		if err != nil {
			return err
		}
		for dst := range w.Size() {
			for _, check := range checks {
				if err := check(dst); err != nil {
					return fmt.Errorf("to rank %d: %w", dst, err)
				}
			}
		}
		return ep.Close()
	})
}

// payloadHandlers registers a handler of each kind of type on ep and
// returns checks that call each on a rank.
func payloadHandlers(ep *am.Endpoint) ([]func(dst int) error, error) {
	var errs []error
	reg := func(err error) { errs = append(errs, err) }
	num, err := am.Register(ep, "num", func(from int, x int64) (float64, error) { return float64(x) / 2, nil })
	reg(err)
	arr, err := am.Register(ep, "arr", func(from int, a [4]int32) ([4]int32, error) {
		return [4]int32{a[3], a[2], a[1], a[0]}, nil
	})
	reg(err)
	pt, err := am.Register(ep, "point", func(from int, p point) (point, error) { return point{2 * p.X, 2 * p.Y, p.N + 1}, nil })
	reg(err)
	vec, err := am.Register(ep, "vec", func(from int, v []float64) ([]float64, error) {
		out := slices.Clone(v)
		slices.Reverse(out)
		return out, nil
	})
	reg(err)
	pairs, err := am.Register(ep, "pairs", func(from int, ps []pair) (int, error) {
		s := 0
		for _, p := range ps {
			s += int(p.A) + int(p.B)
		}
		return s, nil
	})
	reg(err)
	str, err := am.Register(ep, "str", func(from int, s string) (string, error) { return strings.ToUpper(s), nil })
	reg(err)
	keys, err := am.Register(ep, "keys", func(from int, m map[string]int) ([]string, error) {
		return slices.Sorted(maps.Keys(m)), nil
	})
	reg(err)
	list, err := am.Register(ep, "list", func(from int, n *node) (*node, error) {
		return &node{Name: n.Name + "!", Next: n}, nil
	})
	reg(err)
	empty, err := am.Register(ep, "empty", func(from int, _ struct{}) (struct{}, error) { return struct{}{}, nil })
	reg(err)
	var posted atomic.Int64
	post, err := am.Register(ep, "post", func(from int, x []int) (struct{}, error) {
		posted.Add(int64(len(x)))
		return struct{}{}, nil
	})
	reg(err)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return []func(int) error{
		func(dst int) error {
			return expect(num.Call(dst, 5), 2.5)
		},
		func(dst int) error {
			return expect(arr.Call(dst, [4]int32{1, 2, 3, 4}), [4]int32{4, 3, 2, 1})
		},
		func(dst int) error {
			return expect(pt.Call(dst, point{1, -2, 7}), point{2, -4, 8})
		},
		func(dst int) error {
			if err := expect(vec.Call(dst, []float64{1, 2, 3}), []float64{3, 2, 1}); err != nil {
				return err
			}
			return expect(vec.Call(dst, nil), []float64(nil))
		},
		func(dst int) error {
			return expect(pairs.Call(dst, []pair{{1, 2.5}, {3, 4}}), 10)
		},
		func(dst int) error {
			return expect(str.Call(dst, "héllo"), "HÉLLO")
		},
		func(dst int) error {
			return expect(keys.Call(dst, map[string]int{"b": 1, "a": 2}), []string{"a", "b"})
		},
		func(dst int) error {
			got, err := list.Call(dst, &node{Name: "x", Next: &node{Name: "y"}}).Wait()
			if err != nil {
				return err
			}
			if got.Name != "x!" || got.Next.Name != "x" || got.Next.Next.Name != "y" {
				return fmt.Errorf("list: %+v", got)
			}
			return nil
		},
		func(dst int) error {
			return expect(empty.Call(dst, struct{}{}), struct{}{})
		},
		func(dst int) error {
			before := posted.Load()
			for i := range 10 {
				if err := post.Post(dst, make([]int, i)); err != nil {
					return err
				}
			}
			if err := ep.Quiesce(); err != nil {
				return err
			}
			if dst == ep.Rank() && posted.Load()-before < 45 {
				return fmt.Errorf("posts: %d handled here by Quiesce's return", posted.Load()-before)
			}
			return nil
		},
	}, nil
}

// expect waits for f and compares its response with want.
func expect[T any](f *am.Future[T], want T) error {
	got, err := f.Wait()
	if err != nil {
		return err
	}
	if fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", want) {
		return fmt.Errorf("response %#v, want %#v", got, want)
	}
	return nil
}

// In one process a request's slice reaches the handler itself, and the
// response's reaches the caller: nothing is copied.
func TestHandedOver(t *testing.T) {
	run(t, 2, func(w *comm.Comm) error {
		ep, err := am.New(w)
		if err != nil {
			return err
		}
		var seen *float64
		same, err := am.Register(ep, "same", func(from int, v []float64) ([]float64, error) {
			seen = &v[0]
			return v, nil
		})
		if err != nil {
			return err
		}
		if w.Rank() == 0 {
			v := []float64{1, 2}
			got, err := same.Call(1, v).Wait()
			if err != nil {
				return err
			}
			if &got[0] != &v[0] {
				return errors.New("the response is a copy")
			}
		}
		if err := ep.Close(); err != nil {
			return err
		}
		if w.Rank() == 1 && seen == nil {
			return errors.New("the handler did not run")
		}
		return nil
	})
}

// A name registered with other types on the destination: the request
// fails at its caller, matching ErrRemote and comm.ErrType, and the
// dispatcher goes on.
func TestTypeMismatch(t *testing.T) {
	onJobs(t, func(w *comm.Comm) error {
		ep, err := am.New(w)
		if err != nil {
			return err
		}
		if w.Rank()%2 == 0 {
			h, err := am.Register(ep, "t", func(from int, x [2]int32) (int, error) { return 1, nil })
			if err != nil {
				return err
			}
			_, err = h.Call((w.Rank()+1)%w.Size(), [2]int32{1, 2}).Wait()
			if w.Size() > 1 && (!errors.Is(err, am.ErrRemote) || !errors.Is(err, comm.ErrType)) {
				return fmt.Errorf("a request of another type: %v", err)
			}
		} else if _, err := am.Register(ep, "t", func(from int, s []string) (int, error) { return 2, nil }); err != nil {
			return err
		}
		return ep.Close()
	})
}
