// Dht is a distributed hash table built on active messages (package am):
// every rank owns the keys that hash to it, and any rank inserts a key by
// posting it to its owner ("put", fire and forget) and looks one up by
// calling its owner ("get", a Future of the value). No rank ever posts a
// receive: the owners' handlers run where the requests arrive, one at a
// time per rank, so each rank's table needs no lock.
//
// Each rank inserts -keys keys (rank r the keys r, r+np, r+2np, …, each
// mapped to a value computed from it), Quiesce waits until every insert
// has been handled, then each rank looks up -keys keys spread over all
// ranks' inserts plus as many that nobody inserted, -batch at a time in
// flight, and checks every answer; rank 0 prints the verdict. Run it with
//
//	go run ./examples/dht -np 4 -keys 10000
//
// or, as processes over TCP under MPICH's launcher,
//
//	go build -o dht ./examples/dht && mpiexec -n 4 ./dht
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/am"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/typed"
)

func main() {
	np := flag.Int("np", 4, "number of ranks")
	keys := flag.Int("keys", 10000, "keys each rank inserts, and looks up")
	batch := flag.Int("batch", 64, "lookups each rank has in flight")
	flag.Parse()
	mpgo.Main(func(world *comm.Comm) error {
		return dht(world, *keys, *batch, os.Stdout)
	}, mpgo.WithRanks(*np))
}

// run runs the table on np goroutine ranks.
func run(np, keys, batch int, out io.Writer) error {
	return mpgo.Run(np, func(world *comm.Comm) error {
		return dht(world, keys, batch, out)
	})
}

// entry is a lookup's answer: a fixed-size value, so that it travels
// between processes as its memory, without an encoder.
type entry struct {
	Value uint64
	Found bool
}

// owner is the rank that holds key: a multiplicative hash, so that
// consecutive keys spread over the ranks.
func owner(key uint64, size int) int {
	return int((key * 0x9e3779b97f4a7c15 >> 32) % uint64(size))
}

// valueOf is the value inserted for key.
func valueOf(key uint64) uint64 { return key*key + 7 }

// dht inserts and looks up keys on world's ranks and writes rank 0's
// verdict to out.
func dht(world *comm.Comm, keys, batch int, out io.Writer) error {
	if keys < 0 || batch < 1 {
		return fmt.Errorf("dht: -keys %d -batch %d: want keys ≥ 0 and batch ≥ 1", keys, batch)
	}
	ep, err := am.New(world)
	if err != nil {
		return err
	}
	table := make(map[uint64]uint64) // this rank's share; only its handlers touch it
	put, err := am.Register(ep, "put", func(from int, kv [2]uint64) (struct{}, error) {
		if owner(kv[0], ep.Size()) != ep.Rank() {
			return struct{}{}, fmt.Errorf("key %d is not rank %d's", kv[0], ep.Rank())
		}
		table[kv[0]] = kv[1]
		return struct{}{}, nil
	})
	if err != nil {
		return err
	}
	get, err := am.Register(ep, "get", func(from int, key uint64) (entry, error) {
		v, ok := table[key]
		return entry{v, ok}, nil
	})
	if err != nil {
		return err
	}

	n, me := uint64(world.Size()), uint64(world.Rank())
	for i := range uint64(keys) {
		key := me + i*n
		if err := put.Post(owner(key, world.Size()), [2]uint64{key, valueOf(key)}); err != nil {
			return err
		}
	}
	if err := ep.Quiesce(); err != nil { // every insert handled, on every rank
		return err
	}

	// Look up keys inserted by other ranks, and as many that nobody
	// inserted (beyond the last one), a batch of Calls at a time.
	total := uint64(keys) * n
	lookup := func(i uint64) uint64 {
		if i%2 == 1 {
			return total + i // never inserted
		}
		return (i*7919 + me*104729) % max(total, 1)
	}
	var found, missing int64
	futs := make([]*am.Future[entry], 0, batch)
	keysOf := make([]uint64, 0, batch)
	check := func() error {
		for j, f := range futs {
			e, err := f.Wait()
			if err != nil {
				return err
			}
			key := keysOf[j]
			switch {
			case key < total && (!e.Found || e.Value != valueOf(key)):
				return fmt.Errorf("rank %d: get(%d) = %+v, want %d", me, key, e, valueOf(key))
			case key >= total && e.Found:
				return fmt.Errorf("rank %d: get(%d) found %d, inserted by nobody", me, key, e.Value)
			case e.Found:
				found++
			default:
				missing++
			}
		}
		futs, keysOf = futs[:0], keysOf[:0]
		return nil
	}
	for i := range uint64(2 * keys) {
		if total == 0 && i%2 == 0 {
			continue
		}
		key := lookup(i)
		futs = append(futs, get.Call(owner(key, world.Size()), key))
		keysOf = append(keysOf, key)
		if len(futs) == batch {
			if err := check(); err != nil {
				return err
			}
		}
	}
	if err := check(); err != nil {
		return err
	}

	// Totals: the entries held, and the lookups' outcomes.
	sums := make([]int64, 3)
	if err := typed.Of[int64](world).Allreduce([]int64{int64(len(table)), found, missing}, sums, typed.Sum[int64]); err != nil {
		return err
	}
	if err := ep.Close(); err != nil {
		return err
	}
	if sums[0] != int64(total) {
		return errors.New("dht: entries lost")
	}
	if world.Rank() == 0 {
		fmt.Fprintf(out, "dht: %d ranks, %d entries, %d lookups found, %d missing as they should ok\n",
			world.Size(), sums[0], sums[1], sums[2])
	}
	return nil
}
