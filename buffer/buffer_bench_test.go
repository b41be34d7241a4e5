package buffer_test

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/mpgo/mpgo/buffer"
)

// Packing benchmarks beside their baselines: copy() of the same bytes (what
// native-order packing should cost), and encoding/binary.Write (the
// standard library's way of putting numbers in a byte order).

func BenchmarkPack(b *testing.B) {
	const n = 8192 // 64 KiB of float64
	src := make([]float64, n)
	for i := range src {
		src[i] = float64(i)
	}
	dst := make([]float64, n)
	p := benchPool(b)
	for _, o := range []struct {
		name  string
		order binary.ByteOrder
	}{{"native", binary.NativeEndian}, {"swapped", swappedOrder()}} {
		b.Run("write+read/"+o.name, func(b *testing.B) {
			w, _ := buffer.NewWriter(buffer.WithPool(p), buffer.WithOrder(o.order),
				buffer.WithStaticSize(buffer.SectionSize[float64](n)))
			defer w.Free()
			b.SetBytes(n * 8)
			b.ReportAllocs()
			for b.Loop() {
				w.Reset()
				if err := buffer.Write(w, src); err != nil {
					b.Fatal(err)
				}
				if _, err := w.Commit(); err != nil {
					b.Fatal(err)
				}
				if err := buffer.Read(w, dst); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("write+read/copy", func(b *testing.B) {
		buf := make([]byte, n*8)
		b.SetBytes(n * 8)
		b.ReportAllocs()
		for b.Loop() {
			copy(buf, memOf(src))
			copy(memOf(dst), buf)
		}
	})
	b.Run("write+read/binary.Write", func(b *testing.B) {
		var buf bytes.Buffer
		b.SetBytes(n * 8)
		b.ReportAllocs()
		for b.Loop() {
			buf.Reset()
			binary.Write(&buf, binary.BigEndian, src)
			binary.Read(&buf, binary.BigEndian, dst)
		}
	})
}

func swappedOrder() binary.ByteOrder {
	if binary.NativeEndian.Uint16([]byte{1, 0}) == 1 {
		return binary.BigEndian
	}
	return binary.LittleEndian
}

// BenchmarkStrided packs a 256×256 block out of a 1024×1024 float64 matrix
// (runs of 256) and a column of it (stride 1024), beside a hand-written
// index loop into a []float64 and the contiguous copy of as many bytes.
func BenchmarkStrided(b *testing.B) {
	const N = 1024
	m := make([]float64, N*N)
	for i := range m {
		m[i] = float64(i)
	}
	cases := []struct {
		name           string
		offset         int
		shape, strides []int
	}{
		{"block256", 3*N + 5, []int{256, 256}, []int{N, 1}},
		{"column", 5, []int{N}, []int{N}},
	}
	for _, c := range cases {
		count := 1
		for _, n := range c.shape {
			count *= n
		}
		b.Run(c.name+"/gather", func(b *testing.B) {
			w, _ := buffer.NewWriter(buffer.WithStaticSize(buffer.SectionSize[float64](count)))
			b.SetBytes(int64(count * 8))
			b.ReportAllocs()
			for b.Loop() {
				w.Reset()
				if err := buffer.GatherStrided(w, m, c.offset, c.shape, c.strides); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/scatter", func(b *testing.B) {
			w, _ := buffer.NewWriter()
			buffer.GatherStrided(w, m, c.offset, c.shape, c.strides)
			w.Commit()
			dst := make([]float64, N*N)
			b.SetBytes(int64(count * 8))
			b.ReportAllocs()
			for b.Loop() {
				r, _ := buffer.NewReader(w.Bytes())
				if err := buffer.ScatterStrided(r, dst, c.offset, c.shape, c.strides); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/loop", func(b *testing.B) {
			out := make([]float64, count)
			b.SetBytes(int64(count * 8))
			for b.Loop() {
				k := 0
				if len(c.shape) == 2 {
					for i := range c.shape[0] {
						for j := range c.shape[1] {
							out[k] = m[c.offset+i*c.strides[0]+j*c.strides[1]]
							k++
						}
					}
				} else {
					for i := range c.shape[0] {
						out[k] = m[c.offset+i*c.strides[0]]
						k++
					}
				}
			}
		})
		b.Run(c.name+"/copy", func(b *testing.B) {
			out := make([]float64, count)
			b.SetBytes(int64(count * 8))
			for b.Loop() {
				copy(out, m[:count])
			}
		})
	}
}
