package buffer_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"sync"
	"testing"
	"unsafe"

	"github.com/mpgo/mpgo/buffer"
)

func addr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

func newPool(t testing.TB, opts ...buffer.Option) *buffer.Pool {
	t.Helper()
	p, err := buffer.NewPool(opts...)
	if err != nil {
		t.Fatalf("NewPool: %v", err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return p
}

// model drives a pool and remembers what it handed out, so that it can check
// that live blocks never overlap and keep what was written into them.
type model struct {
	p     *buffer.Pool
	live  []liveBlock
	seq   byte
	light bool // pattern only at the ends of blocks (fuzzing: speed)
}

type liveBlock struct {
	b    []byte
	n    int
	seed byte
}

// fill writes a pattern derived from seed into b: every byte of a block up to
// 64 KiB, and the first 64 bytes of every 4 KiB of a larger one (enough to
// catch overlaps, which the address check catches anyway, without making
// the tests crawl).
func fill(b []byte, seed byte) {
	forSpots(b, func(k int) { b[k] = seed + byte(k) + byte(k>>8) })
}

// verify checks the pattern fill wrote.
func verify(b []byte, seed byte) error {
	bad := -1
	forSpots(b, func(k int) {
		if bad < 0 && b[k] != seed+byte(k)+byte(k>>8) {
			bad = k
		}
	})
	if bad >= 0 {
		return fmt.Errorf("byte %d of a %d-byte block overwritten", bad, len(b))
	}
	return nil
}

func forSpots(b []byte, f func(k int)) {
	if len(b) <= 64<<10 {
		for k := range b {
			f(k)
		}
		return
	}
	for c := 0; c < len(b); c += 4 << 10 {
		for k := c; k < c+64 && k < len(b); k++ {
			f(k)
		}
	}
	f(len(b) - 1)
}

func (m *model) get(n int) error {
	b, err := m.p.Get(n)
	if err != nil {
		return err
	}
	if len(b) != n || cap(b) != m.p.BlockSize(n) {
		return fmt.Errorf("Get(%d): len %d cap %d, want cap %d", n, len(b), cap(b), m.p.BlockSize(n))
	}
	if addr(b)%8 != 0 {
		return fmt.Errorf("Get(%d): address %#x not 8-byte aligned", n, addr(b))
	}
	m.seq++
	b = b[:cap(b)]
	m.fill(b, m.seq)
	m.live = append(m.live, liveBlock{b: b, n: n, seed: m.seq})
	return nil
}

func (m *model) put(i int) error {
	lb := m.live[i]
	if err := m.verify(lb.b, lb.seed); err != nil {
		return err
	}
	m.live[i] = m.live[len(m.live)-1]
	m.live = m.live[:len(m.live)-1]
	// Give back the slice as handed out, or resliced: both are valid.
	b := lb.b[:lb.n]
	if lb.seed%2 == 0 {
		b = b[:0]
	}
	return m.p.Put(b)
}

func (m *model) check() error {
	bs := slices.Clone(m.live)
	slices.SortFunc(bs, func(x, y liveBlock) int {
		switch {
		case addr(x.b) < addr(y.b):
			return -1
		case addr(x.b) > addr(y.b):
			return 1
		}
		return 0
	})
	for i := 1; i < len(bs); i++ {
		if addr(bs[i-1].b)+uintptr(cap(bs[i-1].b)) > addr(bs[i].b) {
			return fmt.Errorf("live blocks overlap: [%#x+%d] and [%#x+%d]",
				addr(bs[i-1].b), cap(bs[i-1].b), addr(bs[i].b), cap(bs[i].b))
		}
	}
	for _, lb := range bs {
		if err := m.verify(lb.b, lb.seed); err != nil {
			return err
		}
	}
	return buffer.CheckInvariants(m.p)
}

// drain frees every live block, trims and checks that every region is one
// free block again.
func (m *model) drain() error {
	for len(m.live) > 0 {
		if err := m.put(len(m.live) - 1); err != nil {
			return err
		}
	}
	if err := m.p.Trim(); err != nil {
		return err
	}
	if err := buffer.CheckInvariants(m.p); err != nil {
		return err
	}
	if !buffer.Coalesced(m.p) {
		return errors.New("regions not coalesced after freeing everything")
	}
	s := m.p.Stats()
	top := len(s.Free) - 1
	if s.InUse != 0 || s.Cached != 0 || s.Dedicated != 0 || s.Free[top] != s.RegionBytes || s.Gets != s.Puts {
		return fmt.Errorf("stats after drain: %+v", s)
	}
	for l := range top {
		if s.Free[l] != 0 {
			return fmt.Errorf("stats after drain: %d bytes free on level %d", s.Free[l], l)
		}
	}
	return nil
}

func (m *model) fill(b []byte, seed byte) {
	if m.light {
		fill(b[:8], seed)
		fill(b[len(b)-8:], seed)
		return
	}
	fill(b, seed)
}

func (m *model) verify(b []byte, seed byte) error {
	if m.light {
		return errors.Join(verify(b[:8], seed), verify(b[len(b)-8:], seed))
	}
	return verify(b, seed)
}

// randSize returns sizes spread over every level, sometimes above a region.
func randSize(r *rand.Rand, regionSize int) int {
	shift := r.IntN(bitsLen(regionSize) + 1)
	n := r.IntN(1 << shift)
	if r.IntN(50) == 0 {
		n = regionSize + r.IntN(regionSize)
	}
	return n
}

func bitsLen(n int) int {
	k := 0
	for n > 1 {
		n >>= 1
		k++
	}
	return k
}

func TestPoolProperty(t *testing.T) {
	configs := []struct {
		name  string
		steps int // big regions cost the race detector dearly: fewer steps
		opts  []buffer.Option
	}{
		{"default", 400, nil},
		{"small", 3000, []buffer.Option{buffer.WithRegionSize(64 << 10), buffer.WithMinBlock(16), buffer.WithShards(1)}},
		{"shards4", 3000, []buffer.Option{buffer.WithRegionSize(32 << 10), buffer.WithMinBlock(64), buffer.WithShards(4), buffer.WithRetainRegions(0)}},
		{"offheap", 2000, []buffer.Option{buffer.WithOffHeap(true), buffer.WithRegionSize(256 << 10), buffer.WithRetainRegions(1)}},
	}
	for _, c := range configs {
		t.Run(c.name, func(t *testing.T) {
			steps := c.steps
			if testing.Short() {
				steps /= 5
			}
			for seed := range uint64(3) {
				p := newPool(t, c.opts...)
				rs := p.RegionSize()
				r := rand.New(rand.NewPCG(seed, 42))
				m := &model{p: p}
				for i := range steps {
					var err error
					// Hover around 40 live blocks: enough to fragment
					// regions, few enough to stay within a few regions.
					if len(m.live) == 0 || r.IntN(80) >= len(m.live) {
						err = m.get(randSize(r, rs))
					} else {
						err = m.put(r.IntN(len(m.live)))
					}
					if err != nil {
						t.Fatalf("seed %d step %d: %v", seed, i, err)
					}
					if i%100 == 0 {
						if err := m.check(); err != nil {
							t.Fatalf("seed %d step %d: %v", seed, i, err)
						}
					}
				}
				if err := m.check(); err != nil {
					t.Fatal(err)
				}
				if err := m.drain(); err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
			}
		})
	}
}

func FuzzPool(f *testing.F) {
	f.Add([]byte{0, 10, 0, 20, 1, 0, 0, 200, 1, 1})
	f.Add([]byte{0, 255, 0, 255, 0, 1, 1, 2, 1, 0, 1, 0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		p, err := buffer.NewPool(buffer.WithRegionSize(4096), buffer.WithMinBlock(16),
			buffer.WithShards(2), buffer.WithRetainRegions(1))
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		m := &model{p: p, light: true}
		ops = ops[:min(len(ops), 512)] // long inputs add time, not coverage
		for i := 0; i+1 < len(ops); i += 2 {
			op, arg := ops[i], int(ops[i+1])
			switch {
			case op%4 != 0 || len(m.live) == 0:
				// Sizes 0..8191: every level and dedicated regions.
				if err := m.get(arg * int(op>>2+1) % 8192); err != nil {
					t.Fatal(err)
				}
			default:
				if err := m.put(arg % len(m.live)); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := m.check(); err != nil {
			t.Fatal(err)
		}
		if err := m.drain(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestPoolOptions(t *testing.T) {
	tests := []struct {
		name string
		opts []buffer.Option
		want error
	}{
		{"defaults", nil, nil},
		{"nil option", []buffer.Option{nil}, nil},
		{"region not pow2", []buffer.Option{buffer.WithRegionSize(3 << 20)}, buffer.ErrInvalid},
		{"region below min block", []buffer.Option{buffer.WithRegionSize(64), buffer.WithMinBlock(128)}, buffer.ErrInvalid},
		{"region too large", []buffer.Option{buffer.WithRegionSize(1 << 31)}, buffer.ErrInvalid},
		{"region zero", []buffer.Option{buffer.WithRegionSize(0)}, buffer.ErrInvalid},
		{"min block 4", []buffer.Option{buffer.WithMinBlock(4)}, buffer.ErrInvalid},
		{"min block not pow2", []buffer.Option{buffer.WithMinBlock(100)}, buffer.ErrInvalid},
		{"too many min blocks", []buffer.Option{buffer.WithRegionSize(1 << 30), buffer.WithMinBlock(8)}, buffer.ErrInvalid},
		{"negative retain", []buffer.Option{buffer.WithRetainRegions(-1)}, buffer.ErrInvalid},
		{"zero shards", []buffer.Option{buffer.WithShards(0)}, buffer.ErrInvalid},
		{"too many shards", []buffer.Option{buffer.WithShards(1000)}, buffer.ErrInvalid},
		{"offheap small region", []buffer.Option{buffer.WithOffHeap(true), buffer.WithRegionSize(1024)}, buffer.ErrInvalid},
		{"min equals region", []buffer.Option{buffer.WithRegionSize(4096), buffer.WithMinBlock(4096)}, nil},
		{"shards rounded", []buffer.Option{buffer.WithShards(3)}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := buffer.NewPool(tt.opts...)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("NewPool: %v, want %v", err, tt.want)
			}
			if p != nil {
				if err := p.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
	p := newPool(t, buffer.WithShards(3))
	if got := buffer.Shards(p); got != 4 {
		t.Errorf("WithShards(3): %d shards, want 4", got)
	}
}

func TestPoolBlockSize(t *testing.T) {
	p := newPool(t, buffer.WithRegionSize(1<<20), buffer.WithMinBlock(128))
	page := os.Getpagesize()
	tests := []struct{ n, want int }{
		{-1, 0}, {0, 128}, {1, 128}, {128, 128}, {129, 256}, {4096, 4096}, {4097, 8192},
		{1 << 20, 1 << 20}, {1<<20 + 1, 1<<20 + page}, {buffer.MaxAlloc + 1, 0},
	}
	for _, tt := range tests {
		if got := p.BlockSize(tt.n); got != tt.want {
			t.Errorf("BlockSize(%d) = %d, want %d", tt.n, got, tt.want)
		}
	}
	if p.Levels() != 14 || p.MinBlock() != 128 || p.RegionSize() != 1<<20 {
		t.Errorf("Levels %d MinBlock %d RegionSize %d", p.Levels(), p.MinBlock(), p.RegionSize())
	}
}

func TestPoolErrors(t *testing.T) {
	p := newPool(t, buffer.WithRegionSize(64<<10), buffer.WithShards(1))
	get := func(n int) []byte {
		t.Helper()
		b, err := p.Get(n)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// keep holds one live block so that freed neighbours do not all merge.
	keep := get(100)
	defer p.Put(keep)

	tests := []struct {
		name string
		put  func() error
		want error
	}{
		{"nil", func() error { return p.Put(nil) }, buffer.ErrForeign},
		{"empty", func() error { return p.Put([]byte{}) }, buffer.ErrForeign},
		{"heap slice", func() error { return p.Put(make([]byte, 128)) }, buffer.ErrForeign},
		{"double free", func() error {
			b := get(1000)
			if err := p.Put(b); err != nil {
				return err
			}
			return p.Put(b)
		}, buffer.ErrDoubleFree},
		{"double free after trim", func() error {
			b := get(100)
			if err := p.Put(b); err != nil {
				return err
			}
			if err := p.Trim(); err != nil {
				return err
			}
			return p.Put(b)
		}, buffer.ErrDoubleFree},
		{"interior pointer", func() error {
			b := get(1000)
			defer p.Put(b)
			return p.Put(b[1:])
		}, buffer.ErrNotBlockStart},
		{"interior min block", func() error {
			b := get(1000)
			defer p.Put(b)
			return p.Put(b[128:])
		}, buffer.ErrNotBlockStart},
		{"short capacity", func() error {
			b := get(1000)
			defer p.Put(b)
			return p.Put(b[:10:10])
		}, buffer.ErrNotBlockStart},
		{"reslice is fine", func() error {
			b := get(1000)
			return p.Put(b[:0])
		}, nil},
		{"dedicated double free", func() error {
			b := get(100 << 10)
			if err := p.Put(b); err != nil {
				return err
			}
			return p.Put(b)
		}, buffer.ErrForeign},
		{"dedicated sub-slice", func() error {
			b := get(100 << 10)
			defer p.Put(b)
			return p.Put(b[4096:])
		}, buffer.ErrNotBlockStart},
		{"get negative", func() error { _, err := p.Get(-1); return err }, buffer.ErrInvalid},
		{"get too large", func() error { _, err := p.Get(buffer.MaxAlloc + 1); return err }, buffer.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := p.Stats()
			err := tt.put()
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			if err := buffer.CheckInvariants(p); err != nil {
				t.Fatalf("pool corrupted: %v", err)
			}
			if tt.want != nil {
				if after := p.Stats(); after.InUse != before.InUse {
					t.Fatalf("in use changed from %d to %d", before.InUse, after.InUse)
				}
			}
		})
	}
}

func TestPoolRetainRegions(t *testing.T) {
	for _, retain := range []int{0, 1, 3} {
		t.Run(fmt.Sprint(retain), func(t *testing.T) {
			const rs = 16 << 10
			p := newPool(t, buffer.WithRegionSize(rs), buffer.WithShards(1), buffer.WithRetainRegions(retain))
			var bs [][]byte
			for range 5 {
				b, err := p.Get(rs) // one whole region each
				if err != nil {
					t.Fatal(err)
				}
				bs = append(bs, b)
			}
			if s := p.Stats(); s.Regions != 5 {
				t.Fatalf("%d regions, want 5", s.Regions)
			}
			for _, b := range bs {
				if err := p.Put(b); err != nil {
					t.Fatal(err)
				}
			}
			if s := p.Stats(); s.Regions != retain {
				t.Fatalf("%d regions after freeing all, want %d retained", s.Regions, retain)
			}
			// Retained regions are reused before new ones are made.
			b, err := p.Get(rs)
			if err != nil {
				t.Fatal(err)
			}
			if s := p.Stats(); s.Regions != max(retain, 1) {
				t.Fatalf("%d regions after a get, want %d", s.Regions, max(retain, 1))
			}
			if err := p.Put(b); err != nil {
				t.Fatal(err)
			}
			if err := buffer.CheckInvariants(p); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestPoolDedicated(t *testing.T) {
	for _, off := range []bool{false, true} {
		t.Run(fmt.Sprint("offheap=", off), func(t *testing.T) {
			p := newPool(t, buffer.WithRegionSize(64<<10), buffer.WithOffHeap(off))
			n := 200<<10 + 3
			b, err := p.Get(n)
			if err != nil {
				t.Fatal(err)
			}
			if len(b) != n || cap(b) != p.BlockSize(n) || addr(b)%uintptr(os.Getpagesize()) != 0 {
				t.Fatalf("len %d cap %d addr %#x", len(b), cap(b), addr(b))
			}
			fill(b, 7)
			if s := p.Stats(); s.Dedicated != 1 || s.InUse != int64(cap(b)) {
				t.Fatalf("stats %+v", s)
			}
			if err := verify(b, 7); err != nil {
				t.Fatal(err)
			}
			if err := p.Put(b); err != nil {
				t.Fatal(err)
			}
			if s := p.Stats(); s.Dedicated != 0 || s.RegionBytes != 0 || s.Gets != 1 || s.Puts != 1 {
				t.Fatalf("stats %+v", s)
			}
		})
	}
}

func TestPoolOffHeapAlignment(t *testing.T) {
	p := newPool(t, buffer.WithOffHeap(true), buffer.WithRegionSize(1<<20))
	b, err := p.Get(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	if addr(b)%uintptr(os.Getpagesize()) != 0 {
		t.Fatalf("whole off-heap region at %#x not page-aligned", addr(b))
	}
	fill(b, 3)
	if err := verify(b, 3); err != nil {
		t.Fatal(err)
	}
	if err := p.Put(b); err != nil {
		t.Fatal(err)
	}
}

func TestPoolClose(t *testing.T) {
	for _, off := range []bool{false, true} {
		t.Run(fmt.Sprint("offheap=", off), func(t *testing.T) {
			p, err := buffer.NewPool(buffer.WithRegionSize(64<<10), buffer.WithOffHeap(off), buffer.WithShards(2))
			if err != nil {
				t.Fatal(err)
			}
			live, err := p.Get(1000)
			if err != nil {
				t.Fatal(err)
			}
			big, err := p.Get(1 << 20)
			if err != nil {
				t.Fatal(err)
			}
			for range 10 {
				b, _ := p.Get(5000)
				p.Put(b)
			}
			err = p.Close()
			if !errors.Is(err, buffer.ErrInUse) {
				t.Fatalf("Close with live blocks: %v, want ErrInUse", err)
			}
			if _, err := p.Get(10); !errors.Is(err, buffer.ErrClosed) {
				t.Fatalf("Get after Close: %v", err)
			}
			if _, err := p.Get(1 << 20); !errors.Is(err, buffer.ErrClosed) {
				t.Fatalf("Get dedicated after Close: %v", err)
			}
			if s := p.Stats(); s.Regions != 1 || s.Dedicated != 1 {
				t.Fatalf("after Close: %+v, want the live block's region only", s)
			}
			// Live blocks stay usable and can be put back.
			fill(live, 1)
			if err := p.Put(live); err != nil {
				t.Fatal(err)
			}
			if err := p.Put(big); err != nil {
				t.Fatal(err)
			}
			if s := p.Stats(); s.Regions != 0 || s.RegionBytes != 0 {
				t.Fatalf("after last Put: %+v", s)
			}
			if err := p.Close(); err != nil {
				t.Fatalf("second Close: %v", err)
			}
		})
	}
}

func TestPoolStats(t *testing.T) {
	p := newPool(t, buffer.WithRegionSize(64<<10), buffer.WithMinBlock(128), buffer.WithShards(1))
	b1, _ := p.Get(100)
	b2, _ := p.Get(3000)
	s := p.Stats()
	if s.Regions != 1 || s.InUse != 128+4096 || s.Gets != 2 || s.Puts != 0 {
		t.Fatalf("%+v", s)
	}
	var free int64
	for _, f := range s.Free {
		free += f
	}
	if free+s.InUse != 64<<10 {
		t.Fatalf("free %d + in use %d != region", free, s.InUse)
	}
	p.Put(b1)
	p.Put(b2)
	if err := p.Trim(); err != nil {
		t.Fatal(err)
	}
	s = p.Stats()
	if s.InUse != 0 || s.Free[len(s.Free)-1] != 64<<10 || s.Puts != 2 {
		t.Fatalf("%+v", s)
	}
}

// TestPoolHammer has many goroutines get, fill, check and put blocks, some
// of them freed by another goroutine than the one that got them, across
// GOMAXPROCS 1, 2 and 4. Run it with -race.
func TestPoolHammer(t *testing.T) {
	iters := 1500
	if testing.Short() {
		iters = 300
	}
	for _, procs := range []int{1, 2, 4} {
		t.Run(fmt.Sprint("procs=", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			p := newPool(t, buffer.WithRegionSize(256<<10), buffer.WithMinBlock(64), buffer.WithRetainRegions(1))
			const workers = 8
			handoff := make(chan []byte, workers)
			var wg sync.WaitGroup
			errs := make(chan error, workers)
			for w := range workers {
				wg.Go(func() {
					r := rand.New(rand.NewPCG(uint64(w), 7))
					var mine [][]byte
					for i := range iters {
						n := r.IntN(1 << r.IntN(17))
						b, err := p.Get(n)
						if err != nil {
							errs <- err
							return
						}
						seed := byte(w*31 + i)
						fill(b, seed)
						if err := verify(b, seed); err != nil {
							errs <- fmt.Errorf("worker %d: %w", w, err)
							return
						}
						switch r.IntN(3) {
						case 0:
							mine = append(mine, b)
						case 1:
							select {
							case handoff <- b:
							default:
								mine = append(mine, b)
							}
						default:
							if err := p.Put(b); err != nil {
								errs <- err
								return
							}
						}
						select {
						case o := <-handoff:
							if err := p.Put(o); err != nil {
								errs <- err
								return
							}
						default:
						}
						if len(mine) > 16 {
							for _, o := range mine {
								if err := p.Put(o); err != nil {
									errs <- err
									return
								}
							}
							mine = mine[:0]
						}
					}
					for _, o := range mine {
						if err := p.Put(o); err != nil {
							errs <- err
							return
						}
					}
				})
			}
			wg.Wait()
			close(handoff)
			for o := range handoff {
				if err := p.Put(o); err != nil {
					t.Fatal(err)
				}
			}
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			if err := p.Trim(); err != nil {
				t.Fatal(err)
			}
			if err := buffer.CheckInvariants(p); err != nil {
				t.Fatal(err)
			}
			if !buffer.Coalesced(p) {
				t.Fatal("not coalesced")
			}
			if s := p.Stats(); s.InUse != 0 || s.Gets != s.Puts {
				t.Fatalf("%+v", s)
			}
		})
	}
}

func TestPoolZeroValue(t *testing.T) {
	var p buffer.Pool
	b, err := p.Get(1000)
	if err != nil {
		t.Fatal(err)
	}
	if cap(b) != 1024 || p.RegionSize() != buffer.DefaultRegionSize || p.MinBlock() != buffer.DefaultMinBlock {
		t.Fatalf("cap %d, region %d, min block %d", cap(b), p.RegionSize(), p.MinBlock())
	}
	if err := p.Put(b); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}
