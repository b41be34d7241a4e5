package comm

import (
	"fmt"
	"strings"
)

// Group is an ordered set of ranks, as MPI defines groups (MPI 3.1 §6.3):
// the members of a communicator, or a set built from such members with the
// group algebra below, from which [Comm.Create] makes a communicator.
//
// A Group is an immutable value: every operation returns a new Group and
// leaves its operands alone, so a Group may be copied, shared between
// goroutines and compared freely. It records its members by world rank, and
// the world rank of the process that made it, so that [Group.Rank] can say
// where the caller stands. The zero Group is the empty group.
type Group struct {
	ranks []int // world rank of each member, in group order; never modified
	me    int   // the world rank of the process holding the group, plus 1; 0: unknown
}

// Results of [Group.Compare] and [Compare], as MPI_Group_compare and
// MPI_Comm_compare define them.
const (
	// Ident: the same members in the same order (groups), or the very same
	// communicator (communicators).
	Ident = iota
	// Congruent: communicators with the same members in the same order but
	// distinct contexts (a [Comm.Dup], for instance). Groups are never
	// Congruent.
	Congruent
	// Similar: the same members in a different order.
	Similar
	// Unequal: different members.
	Unequal
)

// Group returns the group of c's members, in rank order. It does not
// communicate.
func (c *Comm) Group() Group {
	ranks := make([]int, c.size)
	for i := range ranks {
		ranks[i] = c.worldOf(i)
	}
	return Group{ranks: ranks, me: c.worldOf(c.rank) + 1}
}

// Size returns the number of members.
func (g Group) Size() int { return len(g.ranks) }

// Rank returns the calling process's rank in g, or [Undefined] when it is
// not a member.
func (g Group) Rank() int {
	if g.me == 0 {
		return Undefined
	}
	for i, w := range g.ranks {
		if w == g.me-1 {
			return i
		}
	}
	return Undefined
}

// WorldRanks returns the world rank of each member, in group order (a copy).
func (g Group) WorldRanks() []int { return append([]int(nil), g.ranks...) }

// String lists the members by world rank.
func (g Group) String() string {
	var b strings.Builder
	b.WriteString("group[")
	for i, w := range g.ranks {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprint(&b, w)
	}
	b.WriteByte(']')
	return b.String()
}

// derive returns a group of the given world ranks held by g's process.
func (g Group) derive(ranks []int) Group { return Group{ranks: ranks, me: g.me} }

// index maps each member's world rank to its rank in g.
func (g Group) index() map[int]int {
	m := make(map[int]int, len(g.ranks))
	for i, w := range g.ranks {
		m[w] = i
	}
	return m
}

// checkRanks validates ranks of g for Incl and Excl: each in [0, Size)
// ([ErrRank]) and no two equal ([ErrArg]).
func (g Group) checkRanks(op string, ranks []int) error {
	seen := make(map[int]bool, len(ranks))
	for _, r := range ranks {
		if r < 0 || r >= len(g.ranks) {
			return fmt.Errorf("comm: group %s: rank %d of %d: %w", op, r, len(g.ranks), ErrRank)
		}
		if seen[r] {
			return fmt.Errorf("comm: group %s: rank %d listed twice: %w", op, r, ErrArg)
		}
		seen[r] = true
	}
	return nil
}

// Incl returns the group of g's members ranks[0], ranks[1], …, in that
// order (MPI_Group_incl). Ranks outside [0, Size) fail with [ErrRank], a
// rank listed twice with [ErrArg]. No ranks give the empty group.
func (g Group) Incl(ranks []int) (Group, error) {
	if err := g.checkRanks("incl", ranks); err != nil {
		return Group{}, err
	}
	out := make([]int, len(ranks))
	for i, r := range ranks {
		out[i] = g.ranks[r]
	}
	return g.derive(out), nil
}

// Excl returns g without the members ranks, the others keeping their order
// (MPI_Group_excl). Errors as for [Group.Incl].
func (g Group) Excl(ranks []int) (Group, error) {
	if err := g.checkRanks("excl", ranks); err != nil {
		return Group{}, err
	}
	drop := make(map[int]bool, len(ranks))
	for _, r := range ranks {
		drop[r] = true
	}
	out := make([]int, 0, len(g.ranks)-len(ranks))
	for i, w := range g.ranks {
		if !drop[i] {
			out = append(out, w)
		}
	}
	return g.derive(out), nil
}

// expand lists the ranks that triplets (first, last, stride) name, in
// order. A zero stride, or a stride pointing away from last, fails with
// [ErrArg]; first or last outside [0, Size) with [ErrRank].
func (g Group) expand(op string, triplets [][3]int) ([]int, error) {
	var out []int
	for _, t := range triplets {
		first, last, stride := t[0], t[1], t[2]
		switch {
		case first < 0 || first >= len(g.ranks) || last < 0 || last >= len(g.ranks):
			return nil, fmt.Errorf("comm: group %s: range %v in a group of %d: %w", op, t, len(g.ranks), ErrRank)
		case stride == 0:
			return nil, fmt.Errorf("comm: group %s: range %v with stride 0: %w", op, t, ErrArg)
		case first < last && stride < 0 || first > last && stride > 0:
			return nil, fmt.Errorf("comm: group %s: range %v: stride points away from last: %w", op, t, ErrArg)
		}
		for r := first; stride > 0 && r <= last || stride < 0 && r >= last; r += stride {
			out = append(out, r)
		}
	}
	return out, nil
}

// RangeIncl returns the group of the members named by the triplets
// (first, last, stride), in the order the triplets list them
// (MPI_Group_range_incl): first, first+stride, … up to last. A negative
// stride counts down. A zero stride, or one pointing away from last, fails
// with [ErrArg]; first or last outside [0, Size) with [ErrRank]; a rank
// named twice with [ErrArg].
func (g Group) RangeIncl(triplets [][3]int) (Group, error) {
	ranks, err := g.expand("range incl", triplets)
	if err != nil {
		return Group{}, err
	}
	return g.Incl(ranks)
}

// RangeExcl returns g without the members named by the triplets, the
// others keeping their order (MPI_Group_range_excl). Errors as for
// [Group.RangeIncl].
func (g Group) RangeExcl(triplets [][3]int) (Group, error) {
	ranks, err := g.expand("range excl", triplets)
	if err != nil {
		return Group{}, err
	}
	return g.Excl(ranks)
}

// holder returns the known holding process of a and b.
func holder(a, b Group) int {
	if a.me != 0 {
		return a.me
	}
	return b.me
}

// Union returns g's members in g's order followed by h's members that are
// not in g, in h's order (MPI_Group_union).
func (g Group) Union(h Group) Group {
	in := g.index()
	out := append(make([]int, 0, len(g.ranks)+len(h.ranks)), g.ranks...)
	for _, w := range h.ranks {
		if _, ok := in[w]; !ok {
			out = append(out, w)
		}
	}
	return Group{ranks: out, me: holder(g, h)}
}

// Intersection returns g's members that are also in h, in g's order
// (MPI_Group_intersection).
func (g Group) Intersection(h Group) Group {
	in := h.index()
	var out []int
	for _, w := range g.ranks {
		if _, ok := in[w]; ok {
			out = append(out, w)
		}
	}
	return Group{ranks: out, me: holder(g, h)}
}

// Difference returns g's members that are not in h, in g's order
// (MPI_Group_difference).
func (g Group) Difference(h Group) Group {
	in := h.index()
	var out []int
	for _, w := range g.ranks {
		if _, ok := in[w]; !ok {
			out = append(out, w)
		}
	}
	return Group{ranks: out, me: holder(g, h)}
}

// TranslateRanks returns the rank in to of each of g's members ranks
// (MPI_Group_translate_ranks): [Undefined] for a member that to lacks,
// [ProcNull] for ProcNull. A rank outside [0, Size) fails with [ErrRank].
func (g Group) TranslateRanks(ranks []int, to Group) ([]int, error) {
	in := to.index()
	out := make([]int, len(ranks))
	for i, r := range ranks {
		switch {
		case r == ProcNull:
			out[i] = ProcNull
		case r < 0 || r >= len(g.ranks):
			return nil, fmt.Errorf("comm: translate rank %d of a group of %d: %w", r, len(g.ranks), ErrRank)
		default:
			t, ok := in[g.ranks[r]]
			if !ok {
				t = Undefined
			}
			out[i] = t
		}
	}
	return out, nil
}

// Compare compares g with h (MPI_Group_compare): [Ident] when they have the
// same members in the same order, [Similar] when the same members in
// another order, [Unequal] otherwise.
func (g Group) Compare(h Group) int {
	if len(g.ranks) != len(h.ranks) {
		return Unequal
	}
	same := true
	for i := range g.ranks {
		if g.ranks[i] != h.ranks[i] {
			same = false
			break
		}
	}
	if same {
		return Ident
	}
	in := h.index()
	for _, w := range g.ranks {
		if _, ok := in[w]; !ok {
			return Unequal
		}
	}
	return Similar
}
