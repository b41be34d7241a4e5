package main

// The tiles of the local multiply: a blockK×blockJ tile of B (256 KiB of
// float64) stays in L2 while every row of A streams past it, and a row
// segment of C (blockJ elements, 4 KiB) stays in L1 across blockK/4
// passes of the innermost loop.
const (
	blockK = 64
	blockJ = 512
)

// mulAdd adds a·b to c, where c is m×nc with row stride ldc, a is m×kd
// with row stride lda and b is kd×nc with row stride ldb, all row-major.
// The loop order is i-k-j, tiled over k and j, and the innermost loop
// takes four rows of b at once so that each element of c is loaded and
// stored once per four multiply-adds. It allocates nothing.
func mulAdd(c []float64, ldc int, a []float64, lda int, b []float64, ldb int, m, kd, nc int) {
	for j0 := 0; j0 < nc; j0 += blockJ {
		j1 := min(j0+blockJ, nc)
		for k0 := 0; k0 < kd; k0 += blockK {
			k1 := min(k0+blockK, kd)
			for i := range m {
				crow := c[i*ldc+j0 : i*ldc+j1]
				arow := a[i*lda : i*lda+kd]
				k := k0
				for ; k+4 <= k1; k += 4 {
					a0, a1, a2, a3 := arow[k], arow[k+1], arow[k+2], arow[k+3]
					b0 := b[k*ldb+j0 : k*ldb+j1]
					b1 := b[(k+1)*ldb+j0 : (k+1)*ldb+j1]
					b2 := b[(k+2)*ldb+j0 : (k+2)*ldb+j1]
					b3 := b[(k+3)*ldb+j0 : (k+3)*ldb+j1]
					b0, b1, b2, b3 = b0[:len(crow)], b1[:len(crow)], b2[:len(crow)], b3[:len(crow)]
					for j := range crow {
						crow[j] += a0*b0[j] + a1*b1[j] + a2*b2[j] + a3*b3[j]
					}
				}
				for ; k < k1; k++ {
					ak := arow[k]
					bk := b[k*ldb+j0 : k*ldb+j1]
					bk = bk[:len(crow)]
					for j := range crow {
						crow[j] += ak * bk[j]
					}
				}
			}
		}
	}
}
