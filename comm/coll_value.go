package comm

import (
	"fmt"
	"reflect"

	"github.com/mpgo/mpgo/comm/internal/coll"
)

// BcastValue broadcasts a Go value with encoding/gob: the root encodes
// *ptr, every other member decodes into *ptr (a non-nil pointer on every
// member). The encoding is made once and shared (shared memory) or handed
// down a binomial tree, so the members decode the same bytes. A value that
// does not decode into a member's *ptr fails there with [ErrType]; a value
// the root cannot encode, or a nil pointer anywhere, fails on every member.
func (c *Comm) BcastValue(ptr any, root int) error {
	const what = "bcast value"
	if err := c.begin(what); err != nil {
		return err
	}
	defer c.leave()
	if err := c.checkRoot(what, root); err != nil {
		return err
	}
	local := checkPtr(ptr)
	var enc []byte
	if local == nil && c.rank == root {
		enc, local = encodeValue(ptr)
	}
	if c.size == 1 {
		return local
	}
	if c.pick(coll.Bcast, coll.Value, 0) == coll.SharedMemory {
		x, err := c.shmStart(what, &shmSlot{kind: kBcastValue | kStaged, root: root, t: Value, a: enc, err: local})
		if err != nil {
			return err
		}
		if x.err == nil && c.rank != root {
			x.err = decodeValue(x.slots[root].a, ptr)
		}
		return x.finish()
	}
	// A binomial tree of owned messages: each rank forwards the bytes it
	// received (no copy in shared memory).
	x := c.call(what, collSig{kind: kBcastValue, root: root, t: Value, n: anyLen}, nil, local)
	n, me := c.size, c.rank
	vr := (me - root + n) % n
	span := n
	if vr != 0 {
		span = vr & -vr
		parent := (me - span + n) % n
		b, st, err := x.c.RecvOwned(Value, parent, AnyTag)
		switch {
		case err != nil:
			x.Stop(err)
		case x.Poisoned(st.Tag, parent):
		case st.Tag != tagValue:
			x.Fail(fmt.Errorf("comm: %s: rank %d is in another collective (tag %d): %w", what, parent, st.Tag, ErrArg))
		default:
			enc = b
		}
	}
	for m := coll.HighBit(span - 1); m > 0 && !x.Stopped(); m >>= 1 {
		if vr+m >= n {
			continue
		}
		data, tag := x.Outgoing(enc, tagValue)
		if err := x.c.SendOwned(data, Value, (me+m)%n, tag); err != nil {
			x.Stop(err)
		}
	}
	if x.OK() && me != root {
		x.Fail(decodeValue(enc, ptr))
	}
	return x.Result()
}

// GatherValue gathers every member's v, encoded with encoding/gob, at the
// root, which decodes them into a new slice stored in *out: out must be a
// non-nil pointer to a slice at the root (it is ignored elsewhere), and
// element i holds rank i's value. A value that cannot be encoded, or a bad
// out at the root, fails on every member; a value that does not decode
// into the slice's element type fails at the root with [ErrType].
func (c *Comm) GatherValue(v any, out any, root int) error {
	const what = "gather value"
	if err := c.begin(what); err != nil {
		return err
	}
	defer c.leave()
	if err := c.checkRoot(what, root); err != nil {
		return err
	}
	enc, local := encodeValue(v)
	var sv reflect.Value
	if c.rank == root {
		rv := reflect.ValueOf(out)
		if !rv.IsValid() || rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Slice {
			if local == nil {
				local = fmt.Errorf("comm: %s into %T: need a non-nil pointer to a slice: %w", what, out, ErrArg)
			}
		} else {
			sv = rv.Elem()
		}
	}
	decodeAll := func(encs func(i int) []byte) error {
		res := reflect.MakeSlice(sv.Type(), c.size, c.size)
		for i := 0; i < c.size; i++ {
			if err := decodeValue(encs(i), res.Index(i).Addr().Interface()); err != nil {
				return fmt.Errorf("comm: %s: rank %d's value: %w", what, i, err)
			}
		}
		sv.Set(res)
		return nil
	}
	if c.size == 1 {
		if local != nil {
			return local
		}
		return decodeAll(func(int) []byte { return enc })
	}
	if c.pick(coll.Gather, coll.Value, 0) == coll.SharedMemory {
		x, err := c.shmStart(what, &shmSlot{kind: kGatherValue | kStaged, root: root, t: Value, a: enc, err: local})
		if err != nil {
			return err
		}
		if x.err == nil && c.rank == root {
			x.err = decodeAll(func(i int) []byte { return x.slots[i].a })
		}
		return x.finish()
	}
	x := c.call(what, collSig{kind: kGatherValue, root: root, t: Value, n: anyLen}, nil, local)
	cc := x.c
	if c.rank != root {
		data, tag := x.Outgoing(enc, tagGatherValue)
		if err := cc.SendOwned(data, Value, root, tag); err != nil {
			x.Stop(err)
		}
		return x.Result()
	}
	encs := make([][]byte, c.size)
	encs[root] = enc
	for i := 0; i < c.size && !x.Stopped(); i++ {
		if i == root {
			continue
		}
		b, st, err := cc.RecvOwned(Value, i, AnyTag)
		switch {
		case err != nil:
			x.Stop(err)
		case x.Poisoned(st.Tag, i):
		case st.Tag != tagGatherValue:
			x.Fail(fmt.Errorf("comm: %s: rank %d is in another collective (tag %d): %w", what, i, st.Tag, ErrArg))
		default:
			encs[i] = b
		}
	}
	if x.OK() {
		x.Fail(decodeAll(func(i int) []byte { return encs[i] }))
	}
	return x.Result()
}
