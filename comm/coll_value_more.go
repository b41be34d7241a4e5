package comm

import (
	"fmt"
	"reflect"
)

// The other value collectives: AllgatherValue, ScatterValue and
// AlltoallValue, built on the byte collectives (Allgatherv, Scatterv,
// Alltoallv of the gob encodings, after an exchange of their lengths). A
// rank that fails before the exchange (a value it cannot encode, a bad
// out pointer) says so in the lengths, with -1, where the collective lets
// the others see it, so that every member fails; a value that does not
// decode fails where it is decoded, with [ErrType].

// AllgatherValue gathers every member's v, encoded with encoding/gob, at
// every member, which decodes them into a new slice stored in *out: out
// must be a non-nil pointer to a slice, and element i holds rank i's
// value (MPI_Allgather of Go values).
func (c *Comm) AllgatherValue(v any, out any) error {
	const what = "allgather value"
	if err := c.begin(what); err != nil {
		return err
	}
	defer c.leave()
	sv, local := sliceOut(what, out)
	var enc []byte
	if local == nil {
		enc, local = encodeValue(v)
	}
	lens := make([]byte, 8*c.size)
	if err := c.allgatherBlocks(lengthWords([]int{len(enc)}, 1, local), lens, Int64); err != nil {
		return fmt.Errorf("comm: %s: %w", what, err)
	}
	counts, err := valueCounts(what, lens, local)
	if err != nil {
		return err
	}
	all := make([]byte, sum(counts))
	if err := c.allgatherVector(enc, all, counts, nil, Byte); err != nil {
		return fmt.Errorf("comm: %s: %w", what, err)
	}
	return decodeEach(what, sv, all, counts)
}

// ScatterValue hands element i of the root's in (a slice of Size values,
// ignored elsewhere), encoded with encoding/gob, to rank i, which decodes
// it into *out (a non-nil pointer on every member).
func (c *Comm) ScatterValue(in any, out any, root int) error {
	const what = "scatter value"
	if err := c.begin(what); err != nil {
		return err
	}
	defer c.leave()
	if err := c.checkRoot(what, root); err != nil {
		return err
	}
	local := checkPtr(out)
	var encs []byte
	lens := make([]byte, 8*c.size)
	if c.rank == root {
		var counts []int
		var rootErr error
		encs, counts, rootErr = encodeEach(what, in, c.size)
		lens = lengthWords(counts, c.size, rootErr)
		if local == nil {
			local = rootErr
		}
	}
	mine := make([]byte, 8)
	if err := c.scatterBlocks(lens, mine, Int64, root); err != nil {
		return fmt.Errorf("comm: %s: %w", what, err)
	}
	k := int(getWords(mine)[0])
	if k < 0 { // the root failed, and every member learnt it
		if local != nil {
			return local
		}
		return fmt.Errorf("comm: %s: the root failed to encode its values: %w", what, ErrArg)
	}
	var counts []int
	if c.rank == root {
		counts, _ = valueCounts(what, lens, nil) // every one of them >= 0 here
	}
	got := make([]byte, k)
	if err := c.scatterVector(encs, counts, nil, got, Byte, root); err != nil {
		return fmt.Errorf("comm: %s: %w", what, err)
	}
	if local != nil {
		return local
	}
	return decodeValue(got, out)
}

// AlltoallValue sends element j of in (a slice of Size values on every
// member), encoded with encoding/gob, to rank j, which decodes the values
// it receives into a new slice stored in *out (a non-nil pointer to a
// slice): element i holds the value from rank i.
func (c *Comm) AlltoallValue(in any, out any) error {
	const what = "alltoall value"
	if err := c.begin(what); err != nil {
		return err
	}
	defer c.leave()
	sv, local := sliceOut(what, out)
	var encs []byte
	var scounts []int
	if local == nil {
		encs, scounts, local = encodeEach(what, in, c.size)
	}
	got := make([]byte, 8*c.size)
	if err := c.alltoallBlocks(lengthWords(scounts, c.size, local), got, Int64); err != nil {
		return fmt.Errorf("comm: %s: %w", what, err)
	}
	rcounts, err := valueCounts(what, got, local)
	if err != nil { // a member failed, and every member learnt it
		return err
	}
	all := make([]byte, sum(rcounts))
	if err := c.alltoallVector(encs, scounts, nil, all, rcounts, nil, Byte); err != nil {
		return fmt.Errorf("comm: %s: %w", what, err)
	}
	return decodeEach(what, sv, all, rcounts)
}

// sliceOut checks that out is a non-nil pointer to a slice and returns
// the slice.
func sliceOut(what string, out any) (reflect.Value, error) {
	rv := reflect.ValueOf(out)
	if !rv.IsValid() || rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Slice {
		return reflect.Value{}, fmt.Errorf("comm: %s into %T: need a non-nil pointer to a slice: %w", what, out, ErrArg)
	}
	return rv.Elem(), nil
}

// encodeEach encodes the n elements of slice in, one after the other,
// and returns the encodings and their lengths.
func encodeEach(what string, in any, n int) ([]byte, []int, error) {
	rv := reflect.ValueOf(in)
	if !rv.IsValid() || rv.Kind() != reflect.Slice || rv.Len() != n {
		return nil, nil, fmt.Errorf("comm: %s of %T: need a slice of %d values: %w", what, in, n, ErrArg)
	}
	var all []byte
	counts := make([]int, n)
	for i := range n {
		enc, err := encodeValue(rv.Index(i).Interface())
		if err != nil {
			return nil, nil, fmt.Errorf("comm: %s: value %d: %w", what, i, err)
		}
		all = append(all, enc...)
		counts[i] = len(enc)
	}
	return all, counts, nil
}

// lengthWords encodes the n lengths a member contributes (putWords): its
// encodings' counts, or -1 for each when it failed (local).
func lengthWords(counts []int, n int, local error) []byte {
	words := make([]int64, n)
	for i := range words {
		words[i] = -1
		if local == nil {
			words[i] = int64(counts[i])
		}
	}
	return putWords(words)
}

// valueCounts reads the members' length words. A member that failed (-1)
// fails the caller too, with its own error when it has one.
func valueCounts(what string, lens []byte, local error) ([]int, error) {
	words := getWords(lens)
	counts := make([]int, len(words))
	var err error
	for i, k := range words {
		if k < 0 {
			if err == nil {
				err = fmt.Errorf("comm: %s: rank %d failed to take part: %w", what, i, ErrArg)
			}
			k = 0
		}
		counts[i] = int(k)
	}
	if local != nil {
		return counts, local
	}
	return counts, err
}

// decodeEach decodes the len(counts) encodings packed in all into a new
// slice stored in sv.
func decodeEach(what string, sv reflect.Value, all []byte, counts []int) error {
	res := reflect.MakeSlice(sv.Type(), len(counts), len(counts))
	off := 0
	for i, k := range counts {
		if err := decodeValue(all[off:off+k], res.Index(i).Addr().Interface()); err != nil {
			return fmt.Errorf("comm: %s: rank %d's value: %w", what, i, err)
		}
		off += k
	}
	sv.Set(res)
	return nil
}

func sum(xs []int) int {
	s := 0
	for _, x := range xs {
		s += x
	}
	return s
}
