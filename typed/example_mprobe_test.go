package typed_test

import (
	"fmt"
	"sync"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/typed"
)

// Two goroutines of rank 0 serve requests of any length from rank 1 on
// one communicator: each sizes its buffer by a matched probe, and the
// message it probed is the one it receives (with Probe and Recv, the
// other goroutine could take it in between).
func ExampleComm_Mprobe() {
	err := mpgo.Run(2, func(w *comm.Comm) error {
		c := typed.Of[int64](w)
		if w.Rank() == 1 {
			for n := 1; n <= 6; n++ {
				job := make([]int64, n) // n ones: a job of length n
				for i := range job {
					job[i] = 1
				}
				if err := c.Send(job, 0, 0); err != nil {
					return err
				}
			}
			return nil
		}
		var (
			mu    sync.Mutex
			total int64
			wg    sync.WaitGroup
		)
		errs := make(chan error, 2)
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 3 {
					m, st, err := c.Mprobe(1, 0)
					if err != nil {
						errs <- err
						return
					}
					job := make([]int64, st.Count) // Count is in elements
					if _, err := c.Mrecv(m, job); err != nil {
						errs <- err
						return
					}
					mu.Lock()
					for _, v := range job {
						total += v
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			return err
		}
		fmt.Println("work done:", total)
		return nil
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output: work done: 21
}
