package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/idemgate/idemgate/client"
)

// Three lines: a client over every node, and a payment that is charged
// once however often the network makes it retry. gateways are the nodes'
// gateway listeners ("http://127.0.0.1:8001", ...).
func ExampleClient_Post() {
	c, _ := client.New(client.Config{Gateways: gateways})
	resp, err := c.Post(context.Background(), "/pay", "application/json", []byte(`{"amount":100}`))
	if err != nil {
		fmt.Println("payment failed:", err)
		return
	}
	fmt.Println(resp.Status, resp.IdemStatus)
	// Output: 201 created
}

// One intent, one key: a retry of the same payment, later or from another
// process, sends the key it was first sent with and gets the stored
// answer.
func ExampleClient_Do() {
	c, _ := client.New(client.Config{Gateways: gateways})
	req := client.Request{
		Path:   "/pay",
		Header: http.Header{"X-User-Id": {"alice"}, "Content-Type": {"application/json"}},
		Body:   []byte(`{"amount":100}`),
		Key:    "order-1001",
	}
	first, _ := c.Do(context.Background(), req)
	again, _ := c.Do(context.Background(), req)
	fmt.Println(first.Status, first.Replayed, again.Status, again.Replayed, string(again.Body) == string(first.Body))

	req.Body = []byte(`{"amount":999}`) // the same key for another request: a bug
	_, err := c.Do(context.Background(), req)
	fmt.Println(errors.Is(err, client.ErrKeyReuse))
	// Output:
	// 201 false 201 true true
	// true
}

// A form token is spent once; every later spend is ErrTokenUsed.
func ExampleTokens_Consume() {
	c, _ := client.New(client.Config{APIs: apis})
	ctx := context.Background()
	tok, err := c.Tokens.Issue(ctx, "pay", 10*time.Minute)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.Tokens.Consume(ctx, "pay", tok.Token))
	fmt.Println(errors.Is(c.Tokens.Consume(ctx, "pay", tok.Token), client.ErrTokenUsed))
	// Output:
	// <nil>
	// true
}

// A lock: SETNX takes it, compare-and-delete releases it only for the
// holder of its version.
func ExampleKV_SetNX() {
	c, _ := client.New(client.Config{APIs: apis})
	ctx := context.Background()
	v, _, err := c.KV.SetNX(ctx, "lock:report", []byte("worker-1"), 30*time.Second)
	fmt.Println(err)
	_, held, err := c.KV.SetNX(ctx, "lock:report", []byte("worker-2"), 30*time.Second)
	fmt.Println(errors.Is(err, client.ErrExists), string(held.Value))
	_, err = c.KV.CompareAndDelete(ctx, "lock:report", v+1000)
	fmt.Println(errors.Is(err, client.ErrVersionMismatch))
	value, err := c.KV.CompareAndDelete(ctx, "lock:report", v)
	fmt.Println(string(value), err)
	// Output:
	// <nil>
	// true worker-1
	// true
	// worker-1 <nil>
}

// Compare-and-set: read a version, write only if nobody wrote since.
func ExampleKV_CAS() {
	c, _ := client.New(client.Config{APIs: apis})
	ctx := context.Background()
	c.KV.Set(ctx, "stock:sku-1", []byte("10"), 0)
	e, _ := c.KV.Get(ctx, "stock:sku-1")
	_, err := c.KV.CAS(ctx, "stock:sku-1", e.Version, []byte("9"), 0)
	fmt.Println(err)
	_, err = c.KV.CAS(ctx, "stock:sku-1", e.Version, []byte("8"), 0) // e.Version is stale now
	fmt.Println(errors.Is(err, client.ErrVersionMismatch))
	last, _ := c.KV.GetDel(ctx, "stock:sku-1")
	fmt.Println(string(last))
	// Output:
	// <nil>
	// true
	// 9
}

// A fair lock: a second caller waits in the lock's queue and is granted it
// the moment the first unlocks, with a higher fence to pass on to what the
// lock protects.
func ExampleClient_Lock() {
	c, _ := client.New(client.Config{APIs: apis})
	ctx := context.Background()
	first, err := c.Lock(ctx, "nightly-report", 30*time.Second)
	fmt.Println(err)
	got := make(chan *client.Lock)
	go func() {
		second, _ := c.Lock(ctx, "nightly-report", 30*time.Second) // waits its turn
		got <- second
	}()
	fmt.Println(first.Unlock(ctx))
	second := <-got
	fmt.Println(second.Fence > first.Fence, second.Unlock(ctx))
	// Output:
	// <nil>
	// <nil>
	// true <nil>
}
