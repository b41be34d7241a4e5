package buffer_test

import (
	"encoding/binary"
	"fmt"

	"github.com/mpgo/mpgo/buffer"
)

func ExamplePool() {
	p, err := buffer.NewPool(buffer.WithRegionSize(1<<20), buffer.WithMinBlock(128))
	if err != nil {
		panic(err)
	}
	defer p.Close()

	b, err := p.Get(3000) // a 4 KiB block: len 3000, cap 4096
	if err != nil {
		panic(err)
	}
	fmt.Println(len(b), cap(b))
	copy(b, "payload")

	if err := p.Put(b); err != nil {
		panic(err)
	}
	fmt.Println(p.Put(b)) // the block is free already
	// Output:
	// 3000 4096
	// buffer: put of 4096 bytes at region offset 0: block already free: buffer: double free
}

func ExamplePool_Stats() {
	p, _ := buffer.NewPool(buffer.WithRegionSize(64<<10), buffer.WithShards(1))
	defer p.Close()
	a, _ := p.Get(100)
	b, _ := p.Get(5000)
	s := p.Stats()
	fmt.Println("regions", s.Regions, "in use", s.InUse, "gets", s.Gets)
	p.Put(a)
	p.Put(b)
	p.Trim() // coalesce the cached blocks
	s = p.Stats()
	fmt.Println("in use", s.InUse, "free at the top level", s.Free[len(s.Free)-1])
	// Output:
	// regions 1 in use 8320 gets 2
	// in use 0 free at the top level 65536
}

type header struct {
	Step int
	Name string
}

func ExampleBuffer() {
	p, _ := buffer.NewPool()
	defer p.Close()

	// Pack: two numeric sections and a Go value.
	pos := []float64{0.5, 1.5, 2.5}
	ids := []int32{7, 8, 9, 10}
	w, _ := buffer.NewWriter(buffer.WithPool(p), buffer.WithOrder(binary.BigEndian),
		buffer.WithStaticSize(buffer.SectionSize[float64](3)+buffer.SectionSize[int32](2)))
	defer w.Free()
	buffer.Write(w, pos)
	buffer.Gather(w, ids, []int{3, 0}) // ids[3], ids[0]
	w.WriteValue(header{Step: 42, Name: "nbody"})
	fmt.Println(w.Sections(), "sections written")
	wire, _ := w.Commit() // the bytes to send

	// Unpack, as the receiver would.
	r, _ := buffer.NewReader(wire)
	kind, count, _ := r.Next()
	got := make([]float64, count)
	buffer.Read(r, got)
	fmt.Println(kind, got)
	picked := make([]int32, 2)
	buffer.Read(r, picked)
	fmt.Println(picked)
	var h header
	r.ReadValue(&h)
	fmt.Printf("%+v\n", h)
	fmt.Println(buffer.Read(r, got))
	// Output:
	// 2 sections written
	// float64 [0.5 1.5 2.5]
	// [10 7]
	// {Step:42 Name:nbody}
	// buffer: section 2: past the last section: buffer: no more data
}

func ExampleRead_mismatch() {
	w, _ := buffer.NewWriter()
	buffer.Write(w, []int8{1})
	buffer.Write(w, make([]float64, 10))
	w.Commit()
	buffer.Read(w, make([]int8, 1))
	fmt.Println(buffer.Read(w, make([]int32, 12)))
	// Output:
	// buffer: section 1 holds 10 float64, read wants 12 int32: buffer: section type mismatch
}

func ExampleGatherStrided() {
	// A 3×4 matrix in row-major order; send its column 2, and the 2×2
	// block at row 1, column 1, and receive the column into a row.
	m := []int{
		0, 1, 2, 3,
		10, 11, 12, 13,
		20, 21, 22, 23,
	}
	w, _ := buffer.NewWriter()
	buffer.GatherStrided(w, m, 2, []int{3}, []int{4})
	buffer.GatherStrided(w, m, 1*4+1, []int{2, 2}, []int{4, 1})
	w.Commit()

	col := make([]int, 3)
	buffer.Read(w, col)
	block := make([]int, 4)
	buffer.Read(w, block)
	fmt.Println(col, block)

	w.Reset()
	buffer.Write(w, []int{-1, -2, -3})
	w.Commit()
	buffer.ScatterStrided(w, m, 2, []int{3}, []int{4}) // back into column 2
	fmt.Println(m)
	// Output:
	// [2 12 22] [11 12 21 22]
	// [0 1 -1 3 10 11 -2 13 20 21 -3 23]
}

func ExampleSectionSize() {
	// A message of 100 float64 and 3 int32, sized beforehand.
	fmt.Println(buffer.SectionSize[float64](100), buffer.SectionSize[int32](3))
	fmt.Println(buffer.HeaderSize + buffer.SectionSize[float64](100) + buffer.SectionSize[int32](3))
	// Output:
	// 808 24
	// 856
}

type Kelvin float64

func ExampleKindOf() {
	fmt.Println(buffer.KindOf[int](), buffer.KindOf[Kelvin](), buffer.KindOf[complex64]().Size())
	// Output:
	// int float64 8
}

func ExampleBuf() {
	p, _ := buffer.NewPool()
	defer p.Close()

	b, _ := p.Alloc(64)
	v, _ := buffer.View[float64](b) // 8 float64 over the 64 bytes
	for i := range v {
		v[i] = float64(i) / 2
	}
	_, err := buffer.View[int32](b) // one element type at a time
	fmt.Println(err)
	b.Unview()

	// A send in flight keeps the owner from freeing the memory.
	b.Acquire()
	fmt.Println(b.Free())
	b.Done()

	// Hand the Buf to another goroutine without copying; it owns it now.
	owned, _ := b.Handoff()
	done := make(chan struct{})
	go func() {
		defer close(done)
		w, _ := buffer.View[float64](owned)
		fmt.Println(len(w), w[3])
		owned.Unview()
		fmt.Println(owned.Free())
	}()
	<-done
	_, err = b.Bytes() // the old handle is dead
	fmt.Println(err)
	// Output:
	// buffer: buf viewed as float64, view wants int32: buffer: buf viewed as another type
	// buffer: buf free: 1 transfers in flight: buffer: in use
	// 8 1.5
	// <nil>
	// buffer: buf bytes: handle handed off: buffer: use after free
}

func ExampleScatter() {
	// Send the elements at odd positions; receive them into the even ones.
	src := []uint16{10, 11, 12, 13, 14, 15}
	w, _ := buffer.NewWriter()
	buffer.Gather(w, src, []int{1, 3, 5})
	w.Commit()

	dst := make([]uint16, 6)
	buffer.Scatter(w, dst, []int{0, 2, 4})
	fmt.Println(dst)
	// Output:
	// [11 0 13 0 15 0]
}

func ExampleWithOffHeap() {
	// Regions from mmap: page-aligned memory outside the Go heap, which the
	// garbage collector never scans and a network card can register.
	p, err := buffer.NewPool(buffer.WithOffHeap(true), buffer.WithRegionSize(1<<20))
	if err != nil {
		panic(err) // ErrNotSupported where there is no mmap
	}
	b, _ := p.Get(100 << 10)
	fmt.Println(len(b), cap(b))
	p.Put(b)
	fmt.Println(p.Close()) // unmaps every region
	// Output:
	// 102400 131072
	// <nil>
}
