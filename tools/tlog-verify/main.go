// tlog-verify checks berth's Merkle proofs and checkpoint notes with an implementation that is not berth's:
// golang.org/x/mod/sumdb/tlog (RFC 6962 hashing, inclusion and consistency proofs) and golang.org/x/mod/sumdb/note
// (C2SP signed notes). Issue 38's interop test (test/chain/tlog-interop.test.ts) runs it.
//
// Input, one JSON document on stdin:
//
//	{"note": "...", "vkey": "<name>+<hash>+<base64 key>",            a checkpoint note and its verifier key
//	 "inclusion": {"tree_size": N, "root": b64, "leaf_index": i, "event_hash": hex, "path": [b64...]},
//	 "consistency": {"old": {"tree_size": M, "root": b64}, "new": {"tree_size": N, "root": b64}, "proof": [b64...]}}
//
// Every member is optional. Output: one line per check, "ok <check>" or "FAIL <check>: <why>"; exit 1 on any FAIL.
package main

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

type tree struct {
	TreeSize int64  `json:"tree_size"`
	Root     string `json:"root"`
}

type input struct {
	Note      string `json:"note"`
	VKey      string `json:"vkey"`
	Inclusion *struct {
		TreeSize  int64    `json:"tree_size"`
		Root      string   `json:"root"`
		LeafIndex int64    `json:"leaf_index"`
		EventHash string   `json:"event_hash"`
		Path      []string `json:"path"`
	} `json:"inclusion"`
	Consistency *struct {
		Old   tree     `json:"old"`
		New   tree     `json:"new"`
		Proof []string `json:"proof"`
	} `json:"consistency"`
}

func hash(b64 string) (tlog.Hash, error) {
	var h tlog.Hash
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(raw) != len(h) {
		return h, fmt.Errorf("not a base64 SHA-256 hash: %q", b64)
	}
	copy(h[:], raw)
	return h, nil
}

func hashes(list []string) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, 0, len(list))
	for _, s := range list {
		h, err := hash(s)
		if err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, nil
}

func main() {
	var in input
	if err := json.NewDecoder(os.Stdin).Decode(&in); err != nil {
		fmt.Println("FAIL input:", err)
		os.Exit(1)
	}
	failed := false
	report := func(check string, err error) {
		if err != nil {
			failed = true
			fmt.Printf("FAIL %s: %v\n", check, err)
		} else {
			fmt.Printf("ok %s\n", check)
		}
	}
	if in.Note != "" {
		report("note", func() error {
			v, err := note.NewVerifier(in.VKey)
			if err != nil {
				return err
			}
			n, err := note.Open([]byte(in.Note), note.VerifierList(v))
			if err != nil {
				return err
			}
			lines := strings.Split(strings.TrimSuffix(n.Text, "\n"), "\n")
			if len(lines) < 3 {
				return fmt.Errorf("checkpoint body has %d lines", len(lines))
			}
			if _, err := strconv.ParseInt(lines[1], 10, 64); err != nil {
				return fmt.Errorf("tree size: %v", err)
			}
			_, err = hash(lines[2])
			return err
		}())
	}
	if p := in.Inclusion; p != nil {
		report("inclusion", func() error {
			root, err := hash(p.Root)
			if err != nil {
				return err
			}
			path, err := hashes(p.Path)
			if err != nil {
				return err
			}
			raw, err := hex.DecodeString(p.EventHash)
			if err != nil || len(raw) != sha256.Size {
				return fmt.Errorf("event_hash is not 64 hex")
			}
			// The leaf's data is the event's 32-byte hash: tlog.RecordHash prefixes 0x00 as RFC 6962 does.
			return tlog.CheckRecord(tlog.RecordProof(path), p.TreeSize, root, p.LeafIndex, tlog.RecordHash(raw))
		}())
	}
	if c := in.Consistency; c != nil {
		report("consistency", func() error {
			oldRoot, err := hash(c.Old.Root)
			if err != nil {
				return err
			}
			newRoot, err := hash(c.New.Root)
			if err != nil {
				return err
			}
			proof, err := hashes(c.Proof)
			if err != nil {
				return err
			}
			return tlog.CheckTree(tlog.TreeProof(proof), c.New.TreeSize, newRoot, c.Old.TreeSize, oldRoot)
		}())
	}
	if failed {
		os.Exit(1)
	}
}
