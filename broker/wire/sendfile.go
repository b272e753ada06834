package wire

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync/atomic"
	"syscall"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FileRecords are the record batches of one Fetch response partition left
// in a file: Len bytes at Off. On a plain TCP connection they are sent
// with sendfile, so they never enter user space; elsewhere the writer
// reads them. The handler that attaches them (Request.SetFetchFiles) owns
// File and closes it once the response is written (Request.AfterWrite).
type FileRecords struct {
	File *os.File
	Off  int64
	Len  int
}

// read reads the records into a buffer of their own.
func (f *FileRecords) read() ([]byte, error) {
	buf := make([]byte, f.Len)
	if n, err := f.File.ReadAt(buf, f.Off); n < f.Len {
		return nil, fmt.Errorf("read %d record bytes of %s at %d: got %d: %w", f.Len, f.File.Name(), f.Off, n, err)
	}
	return buf, nil
}

// sentFromFiles counts the record bytes sent with sendfile.
var sentFromFiles atomic.Int64

// SentFromFiles is how many record bytes Fetch responses have sent with
// sendfile since the process started.
func SentFromFiles() int64 { return sentFromFiles.Load() }

// errNoSendfile: sendfile is not supported for this file or connection;
// nothing was sent.
var errNoSendfile = errors.New("sendfile not supported here")

// sendFileConn returns the raw connection sendfile writes to, or nil when
// nc cannot take it (not TCP, or not on this platform).
func sendFileConn(nc net.Conn) syscall.RawConn {
	tc, ok := nc.(*net.TCPConn)
	if !ok || !canSendFile {
		return nil
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}

// SendsFiles reports whether the response to r may carry FileRecords
// (SetFetchFiles) that go out with sendfile: r is a Fetch the writer
// encodes itself, on a plain TCP connection.
func (r *Request) SendsFiles() bool {
	return r.sendFiles && r.Header.APIKey == apiKeyFetch && r.Header.APIVersion <= maxFetchEncoded
}

// SetFetchFiles attaches the records of a Fetch response that are left in
// files: files[i] belongs to the i-th partition of the response, counted
// over its topics in order; an entry with a nil File (or a missing one)
// means the partition's RecordBatches (which a partition with FileRecords
// does not use).
func (r *Request) SetFetchFiles(files []FileRecords) { r.files = files }

// readFetchFiles reads the records left in files into the response's
// partitions, for a response kmsg encodes.
func readFetchFiles(resp *kmsg.FetchResponse, files []FileRecords) error {
	i := 0
	for t := range resp.Topics {
		for p := range resp.Topics[t].Partitions {
			if i < len(files) && files[i].File != nil {
				data, err := files[i].read()
				if err != nil {
					return err
				}
				resp.Topics[t].Partitions[p].RecordBatches = data
			}
			i++
		}
	}
	return nil
}
