package main

import (
	"context"
	"encoding/binary"
	"io"
	"net"

	"golang.org/x/net/dns/dnsmessage"
)

// loopbackOnly makes every host name resolve to 127.0.0.1, answered in-process: the resolver's
// connection is a pipe to a goroutine, so no DNS query leaves the program. Prometheus' discovery
// dials through a net.Dialer without its own Resolver, which uses net.DefaultResolver.
func loopbackOnly() {
	net.DefaultResolver = &net.Resolver{
		PreferGo: true,
		Dial: func(context.Context, string, string) (net.Conn, error) {
			client, server := net.Pipe()
			go answerLoopback(server)
			return client, nil
		},
	}
}

// answerLoopback serves DNS over a stream (2-byte length prefix, as over TCP: a net.Pipe is not a
// PacketConn, so the Go resolver frames its queries that way): A queries get 127.0.0.1, others
// (AAAA) an empty answer.
func answerLoopback(conn net.Conn) {
	defer conn.Close()
	for {
		var n uint16
		if err := binary.Read(conn, binary.BigEndian, &n); err != nil {
			return
		}
		buf := make([]byte, n)
		if _, err := io.ReadFull(conn, buf); err != nil {
			return
		}
		var p dnsmessage.Parser
		hdr, err := p.Start(buf)
		if err != nil {
			return
		}
		q, err := p.Question()
		if err != nil {
			return
		}
		b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: hdr.ID, Response: true, Authoritative: true})
		b.EnableCompression()
		_ = b.StartQuestions()
		_ = b.Question(q)
		_ = b.StartAnswers()
		if q.Type == dnsmessage.TypeA {
			_ = b.AResource(
				dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60},
				dnsmessage.AResource{A: [4]byte{127, 0, 0, 1}},
			)
		}
		msg, err := b.Finish()
		if err != nil {
			return
		}
		out := binary.BigEndian.AppendUint16(nil, uint16(len(msg)))
		if _, err := conn.Write(append(out, msg...)); err != nil {
			return
		}
	}
}
