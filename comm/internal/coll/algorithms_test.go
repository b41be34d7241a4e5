package coll

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

var (
	testRanks = []int{1, 2, 3, 4, 5, 6, 7, 8, 9}
	testElems = []int{1, 17, 1025} // 4-byte elements: short, odd, beyond a 64-byte split
)

// forAll runs check for every rank count, element count and root.
func forAll(t *testing.T, check func(t *testing.T, n, m, root int)) {
	for _, n := range testRanks {
		for _, m := range testElems {
			for root := range n {
				t.Run(fmt.Sprintf("n=%d/m=%d/root=%d", n, m, root), func(t *testing.T) { check(t, n, m, root) })
			}
		}
	}
}

func noErrors(t *testing.T, errs []error) {
	t.Helper()
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

func TestDissemination(t *testing.T) {
	for _, n := range testRanks {
		noErrors(t, run(n, nil, func(x *Call) { x.Dissemination() }))
	}
}

func TestBcast(t *testing.T) {
	for _, alg := range []Algorithm{Binomial, ScatterAllgather, Flat} {
		t.Run(alg.String(), func(t *testing.T) {
			forAll(t, func(t *testing.T, n, m, root int) {
				want := contribution(root, m)
				bufs := make([][]byte, n)
				noErrors(t, run(n, nil, func(x *Call) {
					bufs[x.rank] = make([]byte, 4*m)
					if x.rank == root {
						copy(bufs[x.rank], want)
					}
					x.Bcast(bufs[x.rank], root, alg)
				}))
				for r, b := range bufs {
					if !bytes.Equal(b, want) {
						t.Errorf("rank %d got %v", r, b[:4])
					}
				}
			})
		})
	}
}

func TestReduce(t *testing.T) {
	for _, alg := range []Algorithm{Binomial, Rabenseifner, Flat} {
		t.Run(alg.String(), func(t *testing.T) {
			forAll(t, func(t *testing.T, n, m, root int) {
				recv := make([]byte, 4*m)
				noErrors(t, run(n, span, func(x *Call) {
					var out []byte
					if x.rank == root {
						out = recv
					}
					x.Reduce(contribution(x.rank, m), out, root, alg)
				}))
				if want := spanOf(0, n-1, m); !bytes.Equal(recv, want) {
					t.Errorf("got %v, want %v", recv[:4], want[:4])
				}
			})
		})
	}
}

func TestAllreduce(t *testing.T) {
	for _, alg := range []Algorithm{RecursiveDoubling, Rabenseifner} {
		t.Run(alg.String(), func(t *testing.T) {
			forAll(t, func(t *testing.T, n, m, root int) {
				if root != 0 {
					return
				}
				out := make([][]byte, n)
				noErrors(t, run(n, span, func(x *Call) {
					out[x.rank] = contribution(x.rank, m) // in place
					x.Allreduce(out[x.rank], out[x.rank], alg)
				}))
				want := spanOf(0, n-1, m)
				for r, b := range out {
					if !bytes.Equal(b, want) {
						t.Errorf("rank %d got %v, want %v", r, b[:4], want[:4])
					}
				}
			})
		})
	}
}

func TestScan(t *testing.T) {
	for _, exclusive := range []bool{false, true} {
		t.Run(fmt.Sprint("exclusive=", exclusive), func(t *testing.T) {
			forAll(t, func(t *testing.T, n, m, root int) {
				if root != 0 {
					return
				}
				out := make([][]byte, n)
				noErrors(t, run(n, span, func(x *Call) {
					out[x.rank] = make([]byte, 4*m)
					x.Scan(contribution(x.rank, m), out[x.rank], exclusive)
				}))
				for r, b := range out {
					hi := r
					if exclusive {
						if hi--; hi < 0 {
							continue // rank 0's recv is untouched
						}
					}
					if want := spanOf(0, hi, m); !bytes.Equal(b, want) {
						t.Errorf("rank %d got %v, want %v", r, b[:4], want[:4])
					}
				}
			})
		})
	}
}

func TestReduceScatter(t *testing.T) {
	forAll(t, func(t *testing.T, n, m, root int) {
		if root != 0 {
			return
		}
		out := make([][]byte, n)
		noErrors(t, run(n, span, func(x *Call) {
			out[x.rank] = make([]byte, 4*m)
			x.ReduceScatter(contribution(x.rank, n*m), out[x.rank], 4*m)
		}))
		all := spanOf(0, n-1, n*m)
		for r, b := range out {
			if want := all[r*4*m : (r+1)*4*m]; !bytes.Equal(b, want) {
				t.Errorf("rank %d got %v, want %v", r, b[:4], want[:4])
			}
		}
	})
}

// blocks returns the n blocks of k bytes each of a gather's result.
func blocks(n, k int) []byte {
	b := make([]byte, 0, n*k)
	for r := range n {
		b = append(b, contribution(r, k/4)...)
	}
	return b
}

func layout(n, k int) (off, cnt []int) {
	off, cnt = make([]int, n), make([]int, n)
	for i := range off {
		off[i], cnt[i] = i*k, k
	}
	return off, cnt
}

func TestGatherScatter(t *testing.T) {
	for _, alg := range []Algorithm{Binomial, Flat} {
		t.Run(alg.String(), func(t *testing.T) {
			forAll(t, func(t *testing.T, n, m, root int) {
				k := 4 * m
				gathered := make([]byte, n*k)
				scattered := make([][]byte, n)
				noErrors(t, run(n, nil, func(x *Call) {
					send := contribution(x.rank, m)
					var recv []byte
					if x.rank == root {
						recv = gathered
					}
					if alg == Binomial {
						x.GatherBinomial(send, recv, k, root)
					} else {
						off, cnt := layout(n, k)
						x.GatherFlat(send, recv, off, cnt, root, false)
					}
					scattered[x.rank] = make([]byte, k)
					if alg == Binomial {
						x.ScatterBinomial(blocks(n, k), scattered[x.rank], k, root)
					} else {
						off, cnt := layout(n, k)
						x.ScatterFlat(blocks(n, k), scattered[x.rank], off, cnt, root, false)
					}
				}))
				if !bytes.Equal(gathered, blocks(n, k)) {
					t.Errorf("gather: wrong blocks at the root")
				}
				for r, b := range scattered {
					if !bytes.Equal(b, contribution(r, m)) {
						t.Errorf("scatter: rank %d got %v", r, b[:4])
					}
				}
			})
		})
	}
}

func TestAllgatherAlltoall(t *testing.T) {
	for _, alg := range []Algorithm{Bruck, Ring} {
		t.Run(alg.String(), func(t *testing.T) {
			forAll(t, func(t *testing.T, n, m, root int) {
				if root != 0 {
					return
				}
				k := 4 * m
				ag := make([][]byte, n)
				a2a := make([][]byte, n)
				noErrors(t, run(n, nil, func(x *Call) {
					me := x.rank
					ag[me] = make([]byte, n*k)
					a2a[me] = make([]byte, n*k)
					send := make([]byte, 0, n*k) // block j for rank j: contribution(me*n+j)
					for j := range n {
						send = append(send, contribution(me*n+j, m)...)
					}
					off, cnt := layout(n, k)
					if alg == Bruck {
						x.AllgatherBruck(contribution(me, m), ag[me], k)
						x.AlltoallBruck(send, a2a[me], k)
					} else {
						copy(ag[me][me*k:], contribution(me, m))
						x.AllgatherRing(ag[me], off, cnt)
						copy(a2a[me][me*k:], send[me*k:(me+1)*k])
						x.AlltoallPairwise(send, off, cnt, a2a[me], off, cnt)
					}
				}))
				for r := range n {
					if !bytes.Equal(ag[r], blocks(n, k)) {
						t.Errorf("allgather: rank %d wrong", r)
					}
					for i := range n {
						if got := a2a[r][i*k : (i+1)*k]; !bytes.Equal(got, contribution(i*n+r, m)) {
							t.Errorf("alltoall: rank %d block %d got %v", r, i, got[:4])
						}
					}
				}
			})
		})
	}
}

// TestPoison: a rank that fails before the collective (a bad argument of
// its own) sends poison in place of data, and every rank that depends on
// it fails with the same sentinel; none hangs (a hang shows as errClosed).
func TestPoison(t *testing.T) {
	const m = 17
	tests := []struct {
		name string
		body func(x *Call, root int)
		all  bool // every rank depends on every other
		// dep reports whether rank r must fail when rank bad does
		// (beside all): nil for a broadcast's (bad itself, and every rank
		// when bad is the root).
		dep func(r, bad, root int) bool
	}{
		{"dissemination", func(x *Call, root int) { x.Dissemination() }, true, nil},
		{"bcast/binomial", func(x *Call, root int) { x.Bcast(make([]byte, 4*m), root, Binomial) }, false, nil},
		{"bcast/scatter-allgather", func(x *Call, root int) { x.Bcast(make([]byte, 4*m), root, ScatterAllgather) }, true, nil},
		{"allreduce/recursive-doubling", func(x *Call, root int) {
			b := contribution(x.rank, m)
			x.Allreduce(b, b, RecursiveDoubling)
		}, true, nil},
		{"allreduce/rabenseifner", func(x *Call, root int) {
			b := contribution(x.rank, m)
			x.Allreduce(b, b, Rabenseifner)
		}, true, nil},
		{"reduce/binomial", func(x *Call, root int) { x.Reduce(contribution(x.rank, m), make([]byte, 4*m), root, Binomial) }, false,
			func(r, bad, root int) bool { return r == root || r == bad }},
		{"allgather/ring", func(x *Call, root int) {
			off, cnt := layout(x.size, 4*m)
			x.AllgatherRing(make([]byte, x.size*4*m), off, cnt)
		}, true, nil},
		{"allgather/bruck", func(x *Call, root int) { x.AllgatherBruck(contribution(x.rank, m), make([]byte, x.size*4*m), 4*m) }, true, nil},
		{"alltoall/bruck", func(x *Call, root int) {
			x.AlltoallBruck(make([]byte, x.size*4*m), make([]byte, x.size*4*m), 4*m)
		}, true, nil},
		{"scan", func(x *Call, root int) { x.Scan(contribution(x.rank, m), make([]byte, 4*m), false) }, false,
			func(r, bad, root int) bool { return r >= bad }},
		{"reduce-scatter", func(x *Call, root int) {
			x.ReduceScatter(contribution(x.rank, x.size*m), make([]byte, 4*m), 4*m)
		}, true, nil},
	}
	for _, tt := range tests {
		for _, n := range []int{2, 3, 5, 8, 9} {
			for _, bad := range []int{0, n - 1, n / 2} {
				t.Run(fmt.Sprintf("%s/n=%d/bad=%d", tt.name, n, bad), func(t *testing.T) {
					root := 0
					errs := run(n, span, func(x *Call) {
						if x.rank == bad {
							x.Fail(fmt.Errorf("test: rank %d: %w", bad, errArg))
						}
						tt.body(x, root)
					})
					for r, err := range errs {
						switch {
						case errors.Is(err, errClosed):
							t.Errorf("rank %d hung: %v", r, err)
						case err != nil && !errors.Is(err, errArg):
							t.Errorf("rank %d: %v, want one wrapping %v", r, err, errArg)
						case err == nil && tt.dep != nil && tt.dep(r, bad, root),
							err == nil && tt.dep == nil && (tt.all || r == bad || bad == root):
							t.Errorf("rank %d succeeded", r)
						}
					}
				})
			}
		}
	}
}

// TestMismatch: ranks that pass different lengths fail with Truncate
// everywhere the difference reaches, and none hangs.
func TestMismatch(t *testing.T) {
	for _, alg := range []Algorithm{RecursiveDoubling, Rabenseifner} {
		for _, n := range []int{2, 3, 4, 7} {
			t.Run(fmt.Sprintf("%v/n=%d", alg, n), func(t *testing.T) {
				errs := run(n, span, func(x *Call) {
					m := 600
					if x.rank == n-1 {
						m = 601
					}
					b := contribution(x.rank, m)
					x.Allreduce(b, b, alg)
				})
				for r, err := range errs {
					if !errors.Is(err, errTruncate) {
						t.Errorf("rank %d: %v, want one wrapping %v", r, err, errTruncate)
					}
				}
			})
		}
	}
}
