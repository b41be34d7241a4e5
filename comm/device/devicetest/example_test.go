package devicetest_test

import (
	"fmt"

	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/comm/device/devicetest"
)

// Two processes of two ranks each, played by worlds of this process and
// joined by loopback devices: a token goes round the ring of all four
// ranks, crossing the devices twice. A new backend's tests play jobs the
// same way, with its own devices in place of the loopbacks, and hand that
// harness to TestBackend.
func ExampleRun() {
	layout := devicetest.Blocks(2, 2)
	devs, loops := devicetest.Loopbacks(2, layout, 1024)
	errs, err := devicetest.Run(devs, layout, 0, func(w *comm.Comm) error {
		n, me := w.Size(), w.Rank()
		token := []byte{0}
		if me > 0 {
			if _, err := w.Recv(token, comm.Byte, me-1, 0); err != nil {
				return err
			}
		}
		token[0]++
		if err := w.Send(token, comm.Byte, (me+1)%n, 0); err != nil {
			return err
		}
		if me == 0 {
			if _, err := w.Recv(token, comm.Byte, n-1, 0); err != nil {
				return err
			}
			fmt.Println("token after one lap:", token[0])
		}
		return nil
	})
	fmt.Println(errs, err)
	for p, l := range loops {
		sent, _ := l.Counts()
		fmt.Printf("process %d sent %d message(s) through its device\n", p, sent)
	}
	// Output:
	// token after one lap: 4
	// [<nil> <nil> <nil> <nil>] <nil>
	// process 0 sent 1 message(s) through its device
	// process 1 sent 1 message(s) through its device
}
