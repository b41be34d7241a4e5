package main

// keyBits is the resolution of the Peano–Hilbert keys per dimension: 21
// bits, so that a key of three dimensions fits in 63 bits (Gadget-2 uses
// the same, BITS_PER_DIMENSION 21).
const keyBits = 21

// hilbertKey returns the position of cell (x, y, z) of a 2^bits-cube
// along the Peano–Hilbert curve that fills it: cells with nearby keys are
// nearby in space (consecutive keys are face neighbours), so a contiguous
// range of keys is a compact domain. It uses Skilling's transform
// ("Programming the Hilbert curve", AIP Conf. Proc. 707, 2004): axes to
// the transposed Hilbert index, then the index's bits interleaved from the
// most significant. x, y and z must be below 2^bits, and bits at most 21.
func hilbertKey(x, y, z uint32, bits int) uint64 {
	X := [3]uint32{x, y, z}
	m := uint32(1) << (bits - 1)
	// Inverse undo.
	for q := m; q > 1; q >>= 1 {
		p := q - 1
		for i := range 3 {
			if X[i]&q != 0 {
				X[0] ^= p
			} else {
				t := (X[0] ^ X[i]) & p
				X[0] ^= t
				X[i] ^= t
			}
		}
	}
	// Gray encode.
	X[1] ^= X[0]
	X[2] ^= X[1]
	var t uint32
	for q := m; q > 1; q >>= 1 {
		if X[2]&q != 0 {
			t ^= q - 1
		}
	}
	X[0] ^= t
	X[1] ^= t
	X[2] ^= t
	var key uint64
	for b := bits - 1; b >= 0; b-- {
		key = key<<3 | uint64(X[0]>>b&1)<<2 | uint64(X[1]>>b&1)<<1 | uint64(X[2]>>b&1)
	}
	return key
}
