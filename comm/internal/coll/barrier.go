package coll

// Dissemination is Hensgen, Finkel and Manber's barrier: in round k every
// rank signals rank+2^k and waits for rank-2^k; after ⌈log2 n⌉ rounds each
// has heard, transitively, from all.
func (x *Call) Dissemination() {
	n, me := x.size, x.rank
	for k := 1; k < n; k <<= 1 {
		x.sendrecv(nil, (me+k)%n, tagDissem, nil, (me-k+n)%n, tagDissem)
	}
}
