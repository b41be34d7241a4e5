//go:build rdma

package fabric

// For the tests of package fabric_test.
var (
	SendsAfterWrites = sendsAfterWrites
	OrderWAS         = orderWAS
	OrderSAW         = orderSAW
)
