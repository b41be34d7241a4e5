package buffer_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/mpgo/mpgo/buffer"
)

func testGatherScatter[T buffer.Number](t *testing.T) {
	for _, o := range orders {
		src := sample[T](50)
		idx := []int{49, 0, 7, 7, 3, 49, 12}
		w, _ := buffer.NewWriter(buffer.WithOrder(o.order))
		if err := buffer.Gather(w, src, idx); err != nil {
			t.Fatal(err)
		}
		wire, _ := w.Commit()
		// The section reads back as the picked elements...
		r, _ := buffer.NewReader(wire)
		got := make([]T, len(idx))
		if err := buffer.Read(r, got); err != nil {
			t.Fatal(err)
		}
		for i, j := range idx {
			if got[i] != src[j] {
				t.Fatalf("%s: element %d = %v, want src[%d] = %v", o.name, i, got[i], j, src[j])
			}
		}
		// ...and scatters back to where they came from.
		r, _ = buffer.NewReader(wire)
		dst := make([]T, len(src))
		if err := buffer.Scatter(r, dst, idx); err != nil {
			t.Fatal(err)
		}
		for _, j := range idx {
			if dst[j] != src[j] {
				t.Fatalf("%s: dst[%d] = %v, want %v", o.name, j, dst[j], src[j])
			}
		}
	}
}

func TestGatherScatter(t *testing.T) {
	t.Run("int16", testGatherScatter[int16])
	t.Run("uint32", testGatherScatter[uint32])
	t.Run("float64", testGatherScatter[float64])
	t.Run("complex64", testGatherScatter[complex64])
	t.Run("complex128", testGatherScatter[complex128])
}

// reference enumerates the indexes of a strided region in row-major order,
// the definition GatherStrided implements, and reports whether all lie in
// [0, length).
func reference(length, offset int, shape, strides []int) ([]int, bool) {
	var out []int
	ok := true
	ctr := make([]int, len(shape))
	for _, n := range shape {
		if n == 0 {
			return nil, true
		}
	}
	for {
		j := offset
		for k := range shape {
			j += ctr[k] * strides[k]
		}
		if j < 0 || j >= length {
			ok = false
		}
		out = append(out, j)
		k := len(shape) - 1
		for ; k >= 0; k-- {
			ctr[k]++
			if ctr[k] < shape[k] {
				break
			}
			ctr[k] = 0
		}
		if k < 0 {
			return out, ok
		}
	}
}

func TestStridedRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const length = 300
	src := make([]int64, length)
	for i := range src {
		src[i] = int64(i)*1000 + 7
	}
	iters := 3000
	if testing.Short() {
		iters = 500
	}
	checked := 0
	for it := range iters {
		nd := r.IntN(5)
		shape, strides := make([]int, nd), make([]int, nd)
		for k := range nd {
			shape[k] = r.IntN(6)
			strides[k] = r.IntN(41) - 20
			if r.IntN(3) == 0 && k == nd-1 {
				strides[k] = 1
			}
		}
		// Some contiguous subarrays, which merge into one run.
		if nd >= 2 && r.IntN(4) == 0 {
			strides[nd-1] = 1
			for k := nd - 2; k >= 0; k-- {
				strides[k] = strides[k+1] * max(shape[k+1], 1)
			}
		}
		offset := r.IntN(length)
		want, ok := reference(length, offset, shape, strides)
		name := fmt.Sprintf("iter %d: offset %d shape %v strides %v", it, offset, shape, strides)
		for _, o := range orders[:2] {
			w, _ := buffer.NewWriter(buffer.WithOrder(o.order))
			err := buffer.GatherStrided(w, src, offset, shape, strides)
			if !ok {
				if !errors.Is(err, buffer.ErrBounds) {
					t.Fatalf("%s: %v, want ErrBounds", name, err)
				}
				if w.Sections() != 0 {
					t.Fatalf("%s: a failed gather wrote a section", name)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			checked++
			wire, _ := w.Commit()
			rd, _ := buffer.NewReader(wire)
			got := make([]int64, len(want))
			if err := buffer.Read(rd, got); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			for i, j := range want {
				if got[i] != src[j] {
					t.Fatalf("%s: element %d = %d, want src[%d] = %d", name, i, got[i], j, src[j])
				}
			}
			// Scatter a section of 1, 2, 3, … into the same region: the
			// last write to an index wins, in row-major order.
			w2, _ := buffer.NewWriter(buffer.WithOrder(o.order))
			vals := make([]int64, len(want))
			for i := range vals {
				vals[i] = int64(i + 1)
			}
			buffer.Write(w2, vals)
			w2.Commit()
			dst := make([]int64, length)
			if err := buffer.ScatterStrided(w2, dst, offset, shape, strides); err != nil {
				t.Fatalf("%s: scatter: %v", name, err)
			}
			ref := make([]int64, length)
			for i, j := range want {
				ref[j] = vals[i]
			}
			if !slices.Equal(dst, ref) {
				t.Fatalf("%s: scatter differs from the reference", name)
			}
		}
	}
	if checked < iters/4 {
		t.Fatalf("only %d in-bounds regions checked", checked)
	}
}

func TestStridedSubarray(t *testing.T) {
	// A 4×5×6 array in row-major order; its [1:3, 0:5, 2:5] subarray.
	a := make([]float32, 4*5*6)
	for i := range a {
		a[i] = float32(i)
	}
	shape, strides := []int{2, 5, 3}, []int{30, 6, 1}
	offset := 1*30 + 2
	w, _ := buffer.NewWriter()
	if err := buffer.GatherStrided(w, a, offset, shape, strides); err != nil {
		t.Fatal(err)
	}
	// The whole array is one run.
	if err := buffer.GatherStrided(w, a, 0, []int{4, 5, 6}, []int{30, 6, 1}); err != nil {
		t.Fatal(err)
	}
	// Columns of a 4×5×6 array read backwards.
	if err := buffer.GatherStrided(w, a, 5, []int{4, 6}, []int{30, -1}); err != nil {
		t.Fatal(err)
	}
	w.Commit()
	sub := make([]float32, 30)
	buffer.Read(w, sub)
	for i, v := range sub {
		x, y, z := i/15, i/3%5, i%3
		if want := float32((1+x)*30 + y*6 + 2 + z); v != want {
			t.Fatalf("sub[%d] = %v, want %v", i, v, want)
		}
	}
	all := make([]float32, len(a))
	buffer.Read(w, all)
	if !slices.Equal(all, a) {
		t.Fatal("whole array differs")
	}
	back := make([]float32, 24)
	buffer.Read(w, back)
	if back[0] != 5 || back[5] != 0 || back[6] != 35 {
		t.Fatalf("backwards: %v", back[:8])
	}
}

func TestGatherErrors(t *testing.T) {
	src := make([]int32, 10)
	tests := []struct {
		name string
		op   func(w *buffer.Buffer) error
		want error
	}{
		{"idx negative", func(w *buffer.Buffer) error { return buffer.Gather(w, src, []int{1, -1}) }, buffer.ErrBounds},
		{"idx too large", func(w *buffer.Buffer) error { return buffer.Gather(w, src, []int{10}) }, buffer.ErrBounds},
		{"idx into empty", func(w *buffer.Buffer) error { return buffer.Gather(w, []int32(nil), []int{0}) }, buffer.ErrBounds},
		{"no idx", func(w *buffer.Buffer) error { return buffer.Gather(w, src, nil) }, nil},
		{"shape strides differ", func(w *buffer.Buffer) error { return buffer.GatherStrided(w, src, 0, []int{2}, nil) }, buffer.ErrInvalid},
		{"negative shape", func(w *buffer.Buffer) error { return buffer.GatherStrided(w, src, 0, []int{-2}, []int{1}) }, buffer.ErrInvalid},
		{"too many dims", func(w *buffer.Buffer) error {
			return buffer.GatherStrided(w, src, 0, make([]int, 33), make([]int, 33))
		}, buffer.ErrInvalid},
		{"count overflow", func(w *buffer.Buffer) error {
			return buffer.GatherStrided(w, src, 0, []int{1 << 30, 1 << 30, 1 << 30}, []int{0, 0, 0})
		}, buffer.ErrInvalid},
		{"offset negative", func(w *buffer.Buffer) error { return buffer.GatherStrided(w, src, -1, nil, nil) }, buffer.ErrBounds},
		{"offset past end", func(w *buffer.Buffer) error { return buffer.GatherStrided(w, src, 10, []int{1}, []int{1}) }, buffer.ErrBounds},
		{"run past end", func(w *buffer.Buffer) error { return buffer.GatherStrided(w, src, 5, []int{6}, []int{1}) }, buffer.ErrBounds},
		{"stride before start", func(w *buffer.Buffer) error { return buffer.GatherStrided(w, src, 5, []int{3}, []int{-3}) }, buffer.ErrBounds},
		{"huge stride", func(w *buffer.Buffer) error { return buffer.GatherStrided(w, src, 0, []int{2}, []int{math.MaxInt}) }, buffer.ErrBounds},
		{"min int stride", func(w *buffer.Buffer) error { return buffer.GatherStrided(w, src, 9, []int{2}, []int{math.MinInt}) }, buffer.ErrBounds},
		{"huge both ways", func(w *buffer.Buffer) error {
			return buffer.GatherStrided(w, src, 5, []int{2, 2}, []int{math.MaxInt / 2, -math.MaxInt / 2})
		}, buffer.ErrBounds},
		{"empty region anywhere", func(w *buffer.Buffer) error { return buffer.GatherStrided(w, src, -7, []int{0, 5}, []int{1, 1}) }, nil},
		{"broadcast", func(w *buffer.Buffer) error { return buffer.GatherStrided(w, src, 9, []int{100, 3}, []int{0, 0}) }, nil},
		{"scalar", func(w *buffer.Buffer) error { return buffer.GatherStrided(w, src, 9, nil, nil) }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, _ := buffer.NewWriter()
			err := tt.op(w)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			if tt.want != nil && w.Sections() != 0 {
				t.Fatal("a failed gather wrote a section")
			}
		})
	}
	// Scatter checks the same way, before touching dst.
	w, _ := buffer.NewWriter()
	buffer.Write(w, []int32{1, 2, 3})
	w.Commit()
	dst := make([]int32, 10)
	if err := buffer.Scatter(w, dst, []int{0, 1, 10}); !errors.Is(err, buffer.ErrBounds) {
		t.Fatalf("Scatter out of bounds: %v", err)
	}
	if err := buffer.ScatterStrided(w, dst, 8, []int{3}, []int{1}); !errors.Is(err, buffer.ErrBounds) {
		t.Fatalf("ScatterStrided out of bounds: %v", err)
	}
	if err := buffer.ScatterStrided(w, dst, 0, []int{4}, []int{1}); !errors.Is(err, buffer.ErrSectionCount) {
		t.Fatalf("ScatterStrided wrong count: %v", err)
	}
	if !slices.Equal(dst, make([]int32, 10)) {
		t.Fatal("failed scatters wrote into dst")
	}
	if err := buffer.ScatterStrided(w, dst, 0, []int{3}, []int{3}); err != nil || dst[6] != 3 {
		t.Fatalf("ScatterStrided: %v %v", dst, err)
	}
}
