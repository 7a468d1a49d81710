package conn_test

import (
	"fmt"
	"sync"

	"github.com/relock-go/relock/internal/conn"
)

func ExamplePool() {
	p := conn.NewPool(0)
	var wg sync.WaitGroup
	results := make([]int, 5)
	for i := range results {
		wg.Add(1)
		p.Go(func() {
			defer wg.Done()
			results[i] = i * i
		})
	}
	wg.Wait()
	fmt.Println(results)
	// Output: [0 1 4 9 16]
}
