package main

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/typed"
)

// particle is one body. Only position, velocity, mass and id travel when
// it migrates (a migrant); the acceleration and potential are recomputed
// where it lands, and the key from its position.
type particle struct {
	pos, vel, acc [3]float64
	mass, pot     float64
	id            int64
	key           uint64 // Peano–Hilbert key in the current bounding box
}

// migrant is what travels of a particle that changes rank: a struct
// element type, sent as it is in memory (typed.Of[migrant]).
type migrant struct {
	pos, vel [3]float64
	mass     float64
	id       int64
}

// gatheredLen is the float64s per particle in the gathered positions: x y z m.
const gatheredLen = 4

// maxKey bounds the keys: 3·keyBits bits.
const maxKey = uint64(1) << (3 * keyBits)

// sim is one rank's part of the simulation, with every buffer the steps
// reuse (grown as needed, never shrunk): a step allocates nothing once
// they have reached their size. It belongs to its rank.
type sim struct {
	f    *typed.Comm[float64]
	ints *typed.Comm[int]
	migr *typed.Comm[migrant]
	rank int
	p    int
	n    int
	eps  float64

	parts []particle

	// The decomposition: rank r owns keys in [split[r], split[r+1]).
	split              []uint64
	lo, hi             []uint64 // bisection brackets per splitter
	below, belowAll    []int    // keys below the candidates: here, everywhere
	target             []int
	sendBuf, recvBuf   []migrant
	scounts, sdispls   []int
	rcounts, rdispls   []int
	migrated           int64
	one, perRank       []int
	mine, all          []float64 // positions and masses: this rank's, everyone's
	gcounts, gdispls   []int
	bbox, bboxAll      []float64
	sums, sumsAll      []float64
	origin             [3]float64
	cellsPerUnitLength float64
}

// newSim sets up rank world.Rank()'s share of the initial conditions.
// Every rank draws the whole sphere (the same, from the seed) and keeps
// every p-th particle; the first decomposition sorts them out.
func newSim(world *comm.Comm, cfg config) *sim {
	p := world.Size()
	s := &sim{
		f:        typed.Of[float64](world),
		ints:     typed.Of[int](world),
		migr:     typed.Of[migrant](world),
		rank:     world.Rank(),
		p:        p,
		n:        cfg.n,
		eps:      cfg.eps,
		split:    make([]uint64, p+1),
		lo:       make([]uint64, p+1),
		hi:       make([]uint64, p+1),
		below:    make([]int, p+1),
		belowAll: make([]int, p+1),
		target:   make([]int, p+1),
		scounts:  make([]int, p),
		sdispls:  make([]int, p),
		rcounts:  make([]int, p),
		rdispls:  make([]int, p),
		one:      make([]int, 1),
		perRank:  make([]int, p),
		gcounts:  make([]int, p),
		gdispls:  make([]int, p),
		bbox:     make([]float64, 6),
		bboxAll:  make([]float64, 6),
		sums:     make([]float64, nSums),
		sumsAll:  make([]float64, nSums),
	}
	for i, b := range plummer(cfg.n, cfg.seed) {
		if i%p == s.rank {
			s.parts = append(s.parts, b)
		}
	}
	return s
}

// plummer draws n equal-mass bodies of a Plummer sphere in N-body units
// (G = M = 1, virial radius 1, E = -1/4) by the method of Aarseth, Hénon
// and Wielen (1974), leaving out the outermost 0.1% of the mass, and
// moves them to the centre-of-mass frame.
func plummer(n int, seed uint64) []particle {
	rng := rand.New(rand.NewPCG(seed, 0x6e626f6479)) // "nbody"
	const scale = 3 * math.Pi / 16                   // Plummer radius in N-body units
	ps := make([]particle, n)
	var com, cov [3]float64
	for i := range ps {
		m := 1 / float64(n)
		x := rng.Float64()*0.999 + 0.0005
		r := 1 / math.Sqrt(math.Pow(x, -2.0/3)-1)
		// Speed as a fraction q of the escape speed, by rejection from
		// g(q) = q²(1-q²)^(7/2), whose maximum is below 0.1.
		var q float64
		for {
			q = rng.Float64()
			if 0.1*rng.Float64() < q*q*math.Pow(1-q*q, 3.5) {
				break
			}
		}
		v := q * math.Sqrt2 * math.Pow(1+r*r, -0.25)
		ps[i] = particle{
			pos:  isotropic(rng, r*scale),
			vel:  isotropic(rng, v/math.Sqrt(scale)),
			mass: m,
			id:   int64(i),
		}
		for d := range 3 {
			com[d] += m * ps[i].pos[d]
			cov[d] += m * ps[i].vel[d]
		}
	}
	for i := range ps {
		for d := range 3 {
			ps[i].pos[d] -= com[d]
			ps[i].vel[d] -= cov[d]
		}
	}
	return ps
}

// isotropic returns a vector of length r in a uniformly random direction.
func isotropic(rng *rand.Rand, r float64) [3]float64 {
	z := 2*rng.Float64() - 1
	phi := 2 * math.Pi * rng.Float64()
	s := math.Sqrt(1 - z*z)
	return [3]float64{r * s * math.Cos(phi), r * s * math.Sin(phi), r * z}
}

// step advances the particles by dt: kick, drift, decompose and migrate,
// forces, kick. Every rank calls it.
func (s *sim) step(dt float64) error {
	s.kick(dt / 2)
	s.drift(dt)
	if err := s.decompose(); err != nil {
		return err
	}
	if err := s.forces(); err != nil {
		return err
	}
	s.kick(dt / 2)
	return nil
}

func (s *sim) kick(h float64) {
	for i := range s.parts {
		b := &s.parts[i]
		for d := range 3 {
			b.vel[d] += h * b.acc[d]
		}
	}
}

func (s *sim) drift(h float64) {
	for i := range s.parts {
		b := &s.parts[i]
		for d := range 3 {
			b.pos[d] += h * b.vel[d]
		}
	}
}

// decompose recomputes the domains for the particles' current positions
// and moves every particle to the rank whose domain holds it. Afterwards
// each rank's particles are sorted by (key, id). Every rank calls it.
func (s *sim) decompose() error {
	if err := s.boundingBox(); err != nil {
		return err
	}
	s.setKeys()
	if err := s.findSplitters(); err != nil {
		return err
	}
	if err := s.migrate(); err != nil {
		return err
	}
	s.setKeys()
	return nil
}

// boundingBox sets the cube the keys are computed in: the smallest cube
// holding every particle, its corner at the smallest coordinates.
func (s *sim) boundingBox() error {
	for d := range 3 {
		s.bbox[d], s.bbox[3+d] = math.Inf(-1), math.Inf(-1) // -min, max
	}
	for i := range s.parts {
		for d, x := range s.parts[i].pos {
			s.bbox[d], s.bbox[3+d] = max(s.bbox[d], -x), max(s.bbox[3+d], x)
		}
	}
	if err := s.f.Allreduce(s.bbox, s.bboxAll, typed.Max[float64]); err != nil {
		return err
	}
	side := 0.0
	for d := range 3 {
		s.origin[d] = -s.bboxAll[d]
		side = max(side, s.bboxAll[3+d]-s.origin[d])
	}
	if !(side > 0) || math.IsInf(side, 0) {
		side = 1 // every particle at one point, or escaped to infinity
	}
	s.cellsPerUnitLength = (1 << keyBits) / side
	return nil
}

// setKeys gives every particle its key and sorts them by (key, id).
func (s *sim) setKeys() {
	const top = 1<<keyBits - 1
	cell := func(x, o float64) uint32 {
		c := (x - o) * s.cellsPerUnitLength
		if !(c > 0) {
			return 0
		}
		return uint32(min(c, top))
	}
	for i := range s.parts {
		b := &s.parts[i]
		b.key = hilbertKey(cell(b.pos[0], s.origin[0]), cell(b.pos[1], s.origin[1]), cell(b.pos[2], s.origin[2]), keyBits)
	}
	slices.SortFunc(s.parts, func(a, b particle) int {
		if c := cmp.Compare(a.key, b.key); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
}

// countBelow returns how many of the (sorted) particles have a key below k.
func (s *sim) countBelow(k uint64) int {
	lo, hi := 0, len(s.parts)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if s.parts[m].key < k {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// findSplitters sets split so that rank r's segment [split[r],
// split[r+1]) holds n(r+1)/p - nr/p of the keys (as nearly as equal keys
// allow). Splitter i is the smallest key k with at least target[i] keys
// below it, found by bisection: each round, every rank counts its keys
// below each candidate and one Allreduce sums the counts, for all
// splitters at once. A candidate with exactly the target below it ends
// its search early (any such key splits the particles the same way).
func (s *sim) findSplitters() error {
	p := s.p
	s.split[0], s.split[p] = 0, maxKey
	active := false
	for i := 1; i < p; i++ {
		s.target[i] = s.n * i / p
		s.lo[i], s.hi[i] = 0, maxKey // invariant: below(lo) < target <= below(hi)
		if s.target[i] == 0 {
			s.hi[i] = 0
		}
		active = active || s.hi[i]-s.lo[i] > 1
	}
	for active {
		for i := 1; i < p; i++ {
			s.below[i] = 0
			if s.hi[i]-s.lo[i] > 1 {
				s.below[i] = s.countBelow(s.lo[i] + (s.hi[i]-s.lo[i])/2)
			}
		}
		if err := s.ints.Allreduce(s.below[1:p], s.belowAll[1:p], typed.Sum[int]); err != nil {
			return err
		}
		active = false
		for i := 1; i < p; i++ {
			if s.hi[i]-s.lo[i] <= 1 {
				continue
			}
			mid := s.lo[i] + (s.hi[i]-s.lo[i])/2
			switch c := s.belowAll[i]; {
			case c == s.target[i]:
				s.lo[i], s.hi[i] = mid-1, mid
			case c > s.target[i]:
				s.hi[i] = mid
			default:
				s.lo[i] = mid
			}
			active = active || s.hi[i]-s.lo[i] > 1
		}
	}
	for i := 1; i < p; i++ {
		s.split[i] = s.hi[i]
	}
	return nil
}

// migrate sends every particle to the rank whose segment holds its key:
// an Alltoall of counts, then an Alltoallv of the migrants. The
// particles must be sorted by key, so that each rank's share is one run.
func (s *sim) migrate() error {
	total := 0
	for r := range s.p {
		from, to := s.countBelow(s.split[r]), s.countBelow(s.split[r+1])
		s.scounts[r], s.sdispls[r] = to-from, from
		if r != s.rank {
			s.migrated += int64(to - from)
		}
		total += to - from
	}
	if total != len(s.parts) {
		panic("nbody: particles outside every segment") // the segments cover every key
	}
	s.sendBuf = grow(s.sendBuf, len(s.parts))
	for i := range s.parts {
		b := &s.parts[i]
		s.sendBuf[i] = migrant{pos: b.pos, vel: b.vel, mass: b.mass, id: b.id}
	}
	if err := s.ints.Alltoall(s.scounts, s.rcounts); err != nil {
		return err
	}
	in := 0
	for r, c := range s.rcounts {
		s.rdispls[r], in = in, in+c
	}
	s.recvBuf = grow(s.recvBuf, in)
	if err := s.migr.Alltoallv(s.sendBuf, s.scounts, s.sdispls, s.recvBuf, s.rcounts, s.rdispls); err != nil {
		return err
	}
	s.parts = grow(s.parts, in)
	for i, q := range s.recvBuf {
		s.parts[i] = particle{pos: q.pos, vel: q.vel, mass: q.mass, id: q.id}
	}
	return nil
}

// grow returns b with length n, reusing its array when it is large enough.
func grow[T any](b []T, n int) []T {
	if cap(b) < n {
		return make([]T, n, n+n/4)
	}
	return b[:n]
}

// forces gathers every particle's position and mass on every rank and
// sets this rank's particles' accelerations and potentials by direct
// summation over all of them, with Plummer softening:
//
//	a_i = Σ_j m_j (x_j - x_i) / (|x_j - x_i|² + ε²)^(3/2)
//	φ_i = -Σ_{j≠i} m_j / (|x_j - x_i|² + ε²)^(1/2)
func (s *sim) forces() error {
	s.one[0] = len(s.parts) * gatheredLen
	if err := s.ints.Allgather(s.one, s.gcounts); err != nil {
		return err
	}
	total := 0
	for r, c := range s.gcounts {
		s.gdispls[r], total = total, total+c
	}
	s.mine = grow(s.mine, len(s.parts)*gatheredLen)
	for i := range s.parts {
		b, q := &s.parts[i], s.mine[i*gatheredLen:(i+1)*gatheredLen]
		q[0], q[1], q[2], q[3] = b.pos[0], b.pos[1], b.pos[2], b.mass
	}
	s.all = grow(s.all, total)
	if err := s.f.Allgatherv(s.mine, s.all, s.gcounts, s.gdispls); err != nil {
		return err
	}
	s.accelerations()
	return nil
}

// accelerations sets the particles' accelerations and potentials from the
// gathered positions and masses in s.all.
func (s *sim) accelerations() {
	eps2 := s.eps * s.eps
	all := s.all
	for i := range s.parts {
		b := &s.parts[i]
		xi, yi, zi := b.pos[0], b.pos[1], b.pos[2]
		var ax, ay, az, phi float64
		for j := 0; j+gatheredLen <= len(all); j += gatheredLen {
			q := all[j : j+gatheredLen : j+gatheredLen]
			dx, dy, dz := q[0]-xi, q[1]-yi, q[2]-zi
			inv := 1 / math.Sqrt(dx*dx+dy*dy+dz*dz+eps2)
			mInv := q[3] * inv
			mInv3 := mInv * inv * inv
			ax += dx * mInv3
			ay += dy * mInv3
			az += dz * mInv3
			phi -= mInv
		}
		b.acc = [3]float64{ax, ay, az}
		b.pot = phi + b.mass/s.eps // without the particle's own term, -m_i/ε
	}
}

// The sums over all particles that stats reduces.
const (
	sumKin = iota // Σ ½ m v²
	sumPot        // Σ ½ m φ (each pair counted from both sides)
	sumPx         // Σ m v
	sumPy
	sumPz
	sumMV // Σ m |v|: the scale momentum errors are judged against
	sumN  // particles
	nSums
)

// stats are the conserved quantities summed over all ranks.
type stats struct {
	kin, pot  float64
	mom       [3]float64
	mv        float64
	count     float64
	imbalance float64 // largest number of particles on a rank over the mean
}

func (st stats) energy() float64 { return st.kin + st.pot }

// stats sums the conserved quantities over the ranks.
func (s *sim) stats() (stats, error) {
	clear(s.sums)
	for i := range s.parts {
		b := &s.parts[i]
		v2 := b.vel[0]*b.vel[0] + b.vel[1]*b.vel[1] + b.vel[2]*b.vel[2]
		s.sums[sumKin] += 0.5 * b.mass * v2
		s.sums[sumPot] += 0.5 * b.mass * b.pot
		s.sums[sumPx] += b.mass * b.vel[0]
		s.sums[sumPy] += b.mass * b.vel[1]
		s.sums[sumPz] += b.mass * b.vel[2]
		s.sums[sumMV] += b.mass * math.Sqrt(v2)
	}
	s.sums[sumN] = float64(len(s.parts))
	if err := s.f.Allreduce(s.sums, s.sumsAll, typed.Sum[float64]); err != nil {
		return stats{}, err
	}
	most := 0
	for _, c := range s.gcounts { // this step's counts, from forces
		most = max(most, c/gatheredLen)
	}
	a := s.sumsAll
	return stats{
		kin:       a[sumKin],
		pot:       a[sumPot],
		mom:       [3]float64{a[sumPx], a[sumPy], a[sumPz]},
		mv:        a[sumMV],
		count:     a[sumN],
		imbalance: float64(most) * float64(s.p) / float64(s.n),
	}, nil
}

// migratedTotal sums over the ranks the particles each sent away.
func (s *sim) migratedTotal() (int64, error) {
	in, out := []int64{s.migrated}, make([]int64, 1)
	err := typed.Of[int64](s.ints.Comm()).Allreduce(in, out, typed.Sum[int64])
	return out[0], err
}

// gatherPositions returns on rank 0 every particle's final position,
// indexed by id (nil elsewhere).
func (s *sim) gatherPositions() ([]float64, error) {
	send := make([]float64, 0, 4*len(s.parts))
	for _, b := range s.parts {
		send = append(send, float64(b.id), b.pos[0], b.pos[1], b.pos[2])
	}
	var counts []int
	var recv []float64
	if s.rank == 0 {
		counts, recv = make([]int, s.p), make([]float64, 4*s.n)
	}
	s.one[0] = len(send)
	if err := s.ints.Gather(s.one, counts, 0); err != nil {
		return nil, err
	}
	if s.rank == 0 {
		total := 0
		for _, c := range counts {
			total += c
		}
		if total > len(recv) { // more particles than there should be
			recv = make([]float64, total)
		}
		recv = recv[:total]
	}
	if err := s.f.Gatherv(send, recv, counts, nil, 0); err != nil {
		return nil, err
	}
	if s.rank != 0 {
		return nil, nil
	}
	pos := make([]float64, 3*s.n)
	for i := range pos {
		pos[i] = math.NaN() // a lost particle shows
	}
	for q := recv; len(q) >= 4; q = q[4:] {
		if id := int(q[0]); id >= 0 && id < s.n {
			copy(pos[3*id:3*id+3], q[1:4])
		}
	}
	return pos, nil
}
