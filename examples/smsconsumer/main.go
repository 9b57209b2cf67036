// Command smsconsumer is a NATS JetStream consumer whose side effects (a
// welcome SMS and the sign-up points) happen once per message, however
// often JetStream delivers it: after a crash between a side effect and
// the ack, an ack lost, a redelivery on ack timeout while the first
// delivery still runs, or a restart. Each side effect runs under
// client.Once with a key derived from the message's id, one key per side
// effect, so a redelivery replays what was done and does only what was
// not. A team copies it and puts its own side effects where handle calls
// the service (handler.call).
//
// It pulls from a durable consumer of a stream (created or updated with
// -ack-wait), one message at a time, and acks each once both side effects
// are done. The side effects go to one HTTP service: POST {service}/sms
// and POST {service}/points, with the message's id in X-Message-Id, each
// call bounded by -call-timeout; the first 64 KiB of the service's answer
// is the result the claim stores.
//
// One window stays open, as it does for any side effect that cannot join
// the claim's transaction: a consumer killed after the SMS service took a
// request and before the claim was completed leaves a claim that runs out
// with its lease, and the next delivery sends it again. A service that
// takes an idempotency key closes it: X-Idempotency-Key carries the once
// key (scope and key) on every call.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/idemgate/idemgate/client"
)

// settings are the command's flags.
type settings struct {
	name     string
	natsURL  string
	stream   string
	consumer string
	apis     []string
	service  string
	lease    time.Duration
	ackWait  time.Duration
	timeout  time.Duration // a side effect's call
}

func main() {
	var s settings
	var apis string
	flag.StringVar(&s.name, "name", "smsconsumer", "this consumer's name, sent as its User-Agent")
	flag.StringVar(&s.natsURL, "nats", nats.DefaultURL, "the NATS server")
	flag.StringVar(&s.stream, "stream", "SIGNUPS", "the JetStream stream to consume")
	flag.StringVar(&s.consumer, "consumer", "welcome", "the durable consumer's name")
	flag.StringVar(&apis, "apis", "http://127.0.0.1:9001,http://127.0.0.1:9002,http://127.0.0.1:9003", "idemgate's API listeners, comma-separated")
	flag.StringVar(&s.service, "service", "http://127.0.0.1:3001", "the SMS and points service")
	flag.DurationVar(&s.lease, "lease", 30*time.Second, "the once claims' lease, renewed at a third of it")
	flag.DurationVar(&s.ackWait, "ack-wait", 30*time.Second, "JetStream's ack wait: a message not acked in it is delivered again")
	flag.DurationVar(&s.timeout, "call-timeout", 10*time.Second, "how long a side effect's call to the service may take")
	flag.Parse()
	s.apis = strings.Split(apis, ",")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, s); err != nil && ctx.Err() == nil {
		log.Fatalf("%s: %v", s.name, err)
	}
}

// run consumes until ctx ends.
func run(ctx context.Context, s settings) error {
	idem, err := client.New(client.Config{APIs: s.apis, OnceLease: s.lease,
		HTTPClient: &http.Client{Timeout: 10 * time.Second, Transport: userAgent(s.name)}})
	if err != nil {
		return err
	}
	nc, err := nats.Connect(s.natsURL, nats.Name(s.name), nats.MaxReconnects(-1))
	if err != nil {
		return fmt.Errorf("connect to nats: %w", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, s.stream, jetstream.ConsumerConfig{
		Durable:    s.consumer,
		AckPolicy:  jetstream.AckExplicitPolicy,
		AckWait:    s.ackWait,
		MaxDeliver: -1, // a message is delivered until it is acked
	})
	if err != nil {
		return fmt.Errorf("consumer %s of stream %s: %w", s.consumer, s.stream, err)
	}
	h := &handler{idem: idem, service: s.service, http: &http.Client{Timeout: s.timeout, Transport: userAgent(s.name)}}
	log.Printf("%s: consuming %s/%s", s.name, s.stream, s.consumer)
	for ctx.Err() == nil {
		batch, err := cons.Fetch(1, jetstream.FetchMaxWait(time.Second))
		if err != nil {
			log.Printf("%s: fetch: %v", s.name, err)
			time.Sleep(100 * time.Millisecond) // reconnecting
			continue
		}
		for msg := range batch.Messages() {
			if err := h.handle(ctx, msg); errors.Is(err, client.ErrKeyReuse) {
				// The publisher sent another body under an id whose work is
				// claimed: delivering it again never helps.
				log.Printf("%s: %s: key reuse, terminated: %v", s.name, msg.Subject(), err)
				msg.Term()
				continue
			} else if err != nil {
				// Not acked: JetStream delivers it again after the ack wait,
				// and the side effects already done are replayed, not redone.
				log.Printf("%s: %s: %v", s.name, msg.Subject(), err)
				continue
			}
			if err := msg.DoubleAck(ctx); err != nil {
				log.Printf("%s: ack %s: %v", s.name, msg.Subject(), err)
			}
		}
	}
	return ctx.Err()
}

// handler does a message's side effects, each once.
type handler struct {
	idem    *client.Client
	service string
	http    *http.Client
}

// messageID is the message's id: the publisher's Nats-Msg-Id (which
// JetStream also deduplicates publishes by), else its stream sequence,
// which every redelivery of it carries too.
func messageID(msg jetstream.Msg) (string, error) {
	if id := msg.Headers().Get(jetstream.MsgIDHeader); id != "" {
		return id, nil
	}
	md, err := msg.Metadata()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s-%d", md.Stream, md.Sequence.Stream), nil
}

// handle does the message's two side effects, each under a once key of
// its own: a redelivery after the SMS was sent and before the points were
// added sends no SMS and adds the points.
func (h *handler) handle(ctx context.Context, msg jetstream.Msg) error {
	id, err := messageID(msg)
	if err != nil {
		return err
	}
	if _, err := h.idem.Once(ctx, "sms", id, msg.Data(), func(ctx context.Context) ([]byte, error) {
		return h.call(ctx, "/sms", "sms", id, msg.Data())
	}); err != nil {
		return fmt.Errorf("sms: %w", err)
	}
	if _, err := h.idem.Once(ctx, "points", id, msg.Data(), func(ctx context.Context) ([]byte, error) {
		return h.call(ctx, "/points", "points", id, msg.Data())
	}); err != nil {
		return fmt.Errorf("points: %w", err)
	}
	return nil
}

// call posts a side effect to the service; its answer is the result the
// once claim stores.
func (h *handler) call(ctx context.Context, path, scope, id string, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.service+path, strings.NewReader(string(body)))
	if err != nil {
		return nil, err
	}
	req.Header.Set("X-Message-Id", id)
	req.Header.Set("X-Idempotency-Key", scope+":"+id)
	resp, err := h.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, errors.New(path + ": " + resp.Status)
	}
	return answer, nil
}

// userAgent names this consumer to the servers it calls.
type userAgent string

func (u userAgent) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("User-Agent", string(u))
	return http.DefaultTransport.RoundTrip(r)
}
