module github.com/mpgo/mpgo

go 1.26.8

require (
	github.com/puzpuzpuz/xsync/v4 v4.5.0
	golang.org/x/exp v0.0.0-20261014143641-f0251eb4aa3e
)

require go.uber.org/goleak v1.3.0
