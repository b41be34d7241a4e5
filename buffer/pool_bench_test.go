package buffer_test

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"

	"github.com/mpgo/mpgo/buffer"
)

// Benchmarks of buffer.Pool beside its two baselines, each run the same way:
//
//   - make: make([]byte, n), kept alive through a global as a message buffer
//     would be (the garbage collector frees it);
//   - syncpool: one sync.Pool per power-of-two size class, storing *[]byte so
//     that Put does not allocate — the usual Go idiom.
//
// Every benchmark reports allocations and garbage collections per operation
// (gc/op), where most of make's cost hides at large sizes.

// sink keeps make's slices on the heap.
var sink []byte

// poolAlloc is the pool under test, panicking on errors that never happen.
type poolAlloc struct{ p *buffer.Pool }

func (a poolAlloc) get(n int) []byte {
	b, err := a.p.Get(n)
	if err != nil {
		panic(err)
	}
	return b
}

func (a poolAlloc) put(b []byte) {
	if err := a.p.Put(b); err != nil {
		panic(err)
	}
}

// makeAlloc is the make baseline.
type makeAlloc struct{}

func (makeAlloc) get(n int) []byte {
	b := make([]byte, n)
	sink = b
	return b
}

func (makeAlloc) put([]byte) {}

// syncPoolAlloc is a size-classed sync.Pool: class c holds slices of
// capacity 1<<c.
type syncPoolAlloc struct {
	classes [48]sync.Pool
}

func (a *syncPoolAlloc) getPtr(n int) *[]byte {
	c := bits.Len(uint(n - 1))
	if n <= 1 {
		c = 0
	}
	if v := a.classes[c].Get(); v != nil {
		bp := v.(*[]byte)
		*bp = (*bp)[:n]
		return bp
	}
	b := make([]byte, n, 1<<c)
	return &b
}

func (a *syncPoolAlloc) putPtr(bp *[]byte) {
	a.classes[bits.Len(uint(cap(*bp)-1))].Put(bp)
}

// measure runs f, the benchmark loop, and reports gc/op beside allocs/op.
func measure(b *testing.B, f func()) {
	b.Helper()
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	f()
	b.StopTimer()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.NumGC-before.NumGC)/float64(b.N), "gc/op")
}

var benchSizes = []struct {
	name string
	n    int
}{
	{"64B", 64}, {"4KiB", 4 << 10}, {"64KiB", 64 << 10}, {"1MiB", 1 << 20}, {"16MiB", 16 << 20},
}

func benchPool(b *testing.B) *buffer.Pool {
	b.Helper()
	p, err := buffer.NewPool()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close() })
	return p
}

// BenchmarkGetPut: one Get and one Put (or make) of n bytes per operation,
// touching the first byte as a user would.
func BenchmarkGetPut(b *testing.B) {
	for _, s := range benchSizes {
		b.Run(s.name+"/pool", func(b *testing.B) {
			a := poolAlloc{benchPool(b)}
			measure(b, func() {
				for range b.N {
					buf := a.get(s.n)
					buf[0] = 1
					a.put(buf)
				}
			})
		})
		b.Run(s.name+"/make", func(b *testing.B) {
			measure(b, func() {
				for range b.N {
					buf := makeAlloc{}.get(s.n)
					buf[0] = 1
				}
			})
		})
		b.Run(s.name+"/syncpool", func(b *testing.B) {
			var a syncPoolAlloc
			measure(b, func() {
				for range b.N {
					bp := a.getPtr(s.n)
					(*bp)[0] = 1
					a.putPtr(bp)
				}
			})
		})
	}
}

// mixedSizes are log-uniform from 64 B to 1 MiB, fixed by the seed.
var mixedSizes = func() []int {
	r := rand.New(rand.NewPCG(1, 2))
	s := make([]int, 1024)
	for i := range s {
		s[i] = 64 << r.IntN(15)
		s[i] += r.IntN(s[i])
	}
	return s
}()

// BenchmarkMixed keeps a window of 16 live blocks of mixed sizes: each
// operation gets one and gives back the one got 16 operations earlier.
func BenchmarkMixed(b *testing.B) {
	const window = 16
	b.Run("pool", func(b *testing.B) {
		a := poolAlloc{benchPool(b)}
		var live [window][]byte
		measure(b, func() {
			for i := range b.N {
				k := i % window
				if live[k] != nil {
					a.put(live[k])
				}
				live[k] = a.get(mixedSizes[i%len(mixedSizes)])
				live[k][0] = 1
			}
		})
		for _, buf := range live {
			if buf != nil {
				a.put(buf)
			}
		}
	})
	b.Run("make", func(b *testing.B) {
		var live [window][]byte
		measure(b, func() {
			for i := range b.N {
				k := i % window
				live[k] = makeAlloc{}.get(mixedSizes[i%len(mixedSizes)])
				live[k][0] = 1
			}
		})
	})
	b.Run("syncpool", func(b *testing.B) {
		var a syncPoolAlloc
		var live [window]*[]byte
		measure(b, func() {
			for i := range b.N {
				k := i % window
				if live[k] != nil {
					a.putPtr(live[k])
				}
				live[k] = a.getPtr(mixedSizes[i%len(mixedSizes)])
				(*live[k])[0] = 1
			}
		})
	})
}

// BenchmarkParallel: Get and Put from 4 goroutines per GOMAXPROCS (8 on
// the 2-core machines mpgo is measured on), per size.
func BenchmarkParallel(b *testing.B) {
	for _, s := range benchSizes[:4] {
		b.Run(fmt.Sprint(s.name, "/pool"), func(b *testing.B) {
			a := poolAlloc{benchPool(b)}
			b.SetParallelism(4)
			measure(b, func() {
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						buf := a.get(s.n)
						buf[0] = 1
						a.put(buf)
					}
				})
			})
		})
		b.Run(fmt.Sprint(s.name, "/make"), func(b *testing.B) {
			b.SetParallelism(4)
			measure(b, func() {
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						buf := make([]byte, s.n) // a variable size: on the heap
						buf[0] = 1
					}
				})
			})
		})
		b.Run(fmt.Sprint(s.name, "/syncpool"), func(b *testing.B) {
			var a syncPoolAlloc
			b.SetParallelism(4)
			measure(b, func() {
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						bp := a.getPtr(s.n)
						(*bp)[0] = 1
						a.putPtr(bp)
					}
				})
			})
		})
	}
}
