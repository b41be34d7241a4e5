//go:build !rdma

package typed_test

// rdmaBuilt says that this test binary has the RDMA backend.
const rdmaBuilt = false
