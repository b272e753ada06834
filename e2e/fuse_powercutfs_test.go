package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// powercutFS is a FUSE filesystem that loses, on a power cut, everything
// that was not made durable, the way a disk with a volatile cache and a
// journaling filesystem would. Reads see every write at once; what
// survives a cut is:
//
//   - File data: a file's content (bytes and size) as of its last fsync
//     or fdatasync (they are the same here). Writes, truncates and
//     fallocate since then are undone. sync_file_range never reaches a
//     FUSE server and makes nothing durable, as on a real disk (it only
//     starts writeback).
//   - The namespace (create, mkdir, link, unlink, rmdir, rename): every
//     such operation is appended to a journal of pending operations, in
//     the order the kernel sent them. An fsync of a directory commits the
//     journal up to the last pending operation that changed that
//     directory (or created or moved it); an fsync of a file commits it up
//     to the last operation that created, linked, renamed or unlinked that
//     file (its "own creation"). Commits are always a prefix of the
//     journal, so the namespace after a cut is exactly the live namespace
//     at some earlier moment: a rename is atomic, never half done, and
//     never reordered with another namespace operation.
//
// Compared with ext4 in data=ordered mode: ext4's namespace operations
// also go through a journal whose commits are ordered prefixes, but ext4
// commits the whole running transaction on any fsync of a changed inode
// and by itself every 5 seconds (commit=5), and, through the ordered mode,
// writes a file's newly allocated data blocks before the metadata that
// points at them. This model never commits by itself and commits only
// the prefix that the fsync'd inode needs, so it loses at least as much
// as ext4 would at the same instant: a file whose creation is durable but
// whose data never was comes back short or empty (ext4's delayed
// allocation "zero-length file" case), and a rename that no fsync covered
// is undone. It keeps file data and namespace independent: fsync of a
// directory does not make the data of files in it durable.
//
// Durable file content lives in the backing directory, one file per inode
// (data/<id>); live content is that plus, in memory, the pages written
// since the last fsync. The durable namespace is kept in memory (the test
// process outlives every cut). cut reverts to the durable state: it
// unmounts (the caller must first kill every process using the mount),
// drops every pending page and journal entry, and mounts a new tree built
// from the durable state.
//
// Files are not opened with direct I/O, so the kernel's page cache serves
// mmap (bbolt reads through it); there is no writeback cache, so every
// write reaches the server before write(2) returns. Never touch an mmap
// of a file on this mount from the test process that serves it: a page
// fault there can deadlock with the Go runtime (see runPowercutChild).
type powercutFS struct {
	dir, backing string
	server       *fuse.Server

	mu      sync.Mutex
	nextID  uint64
	durable nsState // namespace as of the last commit
	pending []nsOp  // namespace operations since
	live    map[uint64]*pcFile
	// stats
	fsyncs, dirFsyncs, cuts int
	lostBytes, lostOps      int64
}

const pcPage = 4096

type nsKind int

const (
	nsCreate nsKind = iota // a file
	nsMkdir
	nsLink
	nsUnlink // a file or a directory
	nsRename
)

type nsOp struct {
	kind         nsKind
	dir, newDir  uint64
	name, newNam string
	id           uint64 // the child the operation is about
	mode         uint32
}

func (o nsOp) involves(id uint64) bool {
	return o.dir == id || o.newDir == id || o.id == id
}

// nsState is a namespace: directories by id, and each file's or
// directory's mode.
type nsState struct {
	dirs  map[uint64]map[string]uint64
	modes map[uint64]uint32
}

func (s *nsState) apply(o nsOp) {
	switch o.kind {
	case nsCreate, nsLink, nsMkdir:
		if s.dirs[o.dir] == nil {
			return
		}
		s.dirs[o.dir][o.name] = o.id
		if o.kind != nsLink {
			s.modes[o.id] = o.mode
		}
		if o.kind == nsMkdir {
			s.dirs[o.id] = map[string]uint64{}
		}
	case nsUnlink:
		id, ok := s.dirs[o.dir][o.name]
		if !ok {
			return
		}
		delete(s.dirs[o.dir], o.name)
		s.forget(id)
	case nsRename:
		id, ok := s.dirs[o.dir][o.name]
		if !ok || s.dirs[o.newDir] == nil {
			return
		}
		delete(s.dirs[o.dir], o.name)
		old, had := s.dirs[o.newDir][o.newNam]
		s.dirs[o.newDir][o.newNam] = id
		if had && old != id {
			s.forget(old)
		}
	}
}

// forget drops a directory's entries once it is unlinked, and the mode of
// anything no entry names any more.
func (s *nsState) forget(id uint64) {
	if s.refs(id) > 0 {
		return
	}
	delete(s.dirs, id)
	delete(s.modes, id)
}

func (s *nsState) refs(id uint64) int {
	n := 0
	for _, ents := range s.dirs {
		for _, c := range ents {
			if c == id {
				n++
			}
		}
	}
	return n
}

const pcRootID = 1

const pcRenameNoReplace = 0x1 // RENAME_NOREPLACE

// newPowercutFS mounts a power-cut filesystem on dir, keeping its durable
// state in backing (created; its data/ subdirectory holds the files'
// durable content).
func newPowercutFS(dir, backing string) (*powercutFS, error) {
	p := &powercutFS{dir: dir, backing: backing, nextID: pcRootID + 1,
		durable: nsState{dirs: map[uint64]map[string]uint64{pcRootID: {}}, modes: map[uint64]uint32{pcRootID: 0o755}}}
	if err := os.MkdirAll(filepath.Join(backing, "data"), 0o755); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return p, p.mount()
}

func (p *powercutFS) dataPath(id uint64) string {
	return filepath.Join(p.backing, "data", strconv.FormatUint(id, 10))
}

// mount serves a live tree built from the durable state.
func (p *powercutFS) mount() error {
	p.mu.Lock()
	p.live = map[uint64]*pcFile{}
	p.pending = nil
	p.mu.Unlock()
	root := &pcDir{pfs: p, id: pcRootID, mode: p.durable.modes[pcRootID]}
	sec := time.Second
	opts := &fs.Options{
		EntryTimeout: &sec,
		AttrTimeout:  &sec,
		MountOptions: fuse.MountOptions{
			DirectMountStrict: true,
			FsName:            "powercutfs",
			Name:              "powercutfs",
			AllowOther:        true,
			MaxWrite:          1 << 20,
		},
		RootStableAttr: &fs.StableAttr{Ino: pcRootID},
		OnAdd: func(ctx context.Context) {
			p.build(ctx, root, pcRootID, map[uint64]*fs.Inode{})
		},
	}
	server, err := fs.Mount(p.dir, root, opts)
	if err != nil {
		return fmt.Errorf("mount powercutfs on %s: %w", p.dir, err)
	}
	p.server = server
	return nil
}

// build adds the durable entries of directory id under parent.
func (p *powercutFS) build(ctx context.Context, parent *pcDir, id uint64, made map[uint64]*fs.Inode) {
	names := make([]string, 0, len(p.durable.dirs[id]))
	for name := range p.durable.dirs[id] {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		cid := p.durable.dirs[id][name]
		if in, ok := made[cid]; ok { // a hard link
			parent.AddChild(name, in, true)
			in.Operations().(*pcFile).nlink++
			continue
		}
		mode := p.durable.modes[cid]
		if sub, ok := p.durable.dirs[cid]; ok && sub != nil {
			d := &pcDir{pfs: p, id: cid, mode: mode}
			in := parent.NewPersistentInode(ctx, d, fs.StableAttr{Mode: syscall.S_IFDIR, Ino: cid})
			parent.AddChild(name, in, true)
			made[cid] = in
			p.build(ctx, d, cid, made)
			continue
		}
		f := &pcFile{pfs: p, id: cid, mode: mode, nlink: 1, mtime: time.Now()}
		if st, err := os.Stat(p.dataPath(cid)); err == nil {
			f.size, f.dsize, f.zeroFrom = st.Size(), st.Size(), st.Size()
		}
		in := parent.NewPersistentInode(ctx, f, fs.StableAttr{Mode: syscall.S_IFREG, Ino: cid})
		parent.AddChild(name, in, true)
		made[cid] = in
		p.live[cid] = f
	}
}

// unmount takes the filesystem away; every process using it must be gone
// (a busy mount is detached lazily).
func (p *powercutFS) unmount() error {
	if p.server == nil {
		return nil
	}
	s := p.server
	p.server = nil
	if err := s.Unmount(); err != nil {
		if err2 := syscall.Unmount(p.dir, syscall.MNT_DETACH); err2 != nil {
			return fmt.Errorf("unmount %s: %v; lazily: %v", p.dir, err, err2)
		}
		s.Wait()
	}
	p.mu.Lock()
	for _, f := range p.live {
		f.closeBacking()
	}
	p.mu.Unlock()
	return nil
}

// cut is the power cut: whatever was not durable is lost, and the mount
// comes back with the durable state.
func (p *powercutFS) cut() error {
	if err := p.unmount(); err != nil {
		return err
	}
	p.mu.Lock()
	p.cuts++
	p.lostOps += int64(len(p.pending))
	for _, f := range p.live {
		f.mu.Lock()
		p.lostBytes += int64(len(f.dirty)) * pcPage
		f.mu.Unlock()
	}
	// Drop the durable content of files no durable entry names.
	ents, _ := os.ReadDir(filepath.Join(p.backing, "data"))
	for _, e := range ents {
		id, err := strconv.ParseUint(e.Name(), 10, 64)
		if err == nil && p.durable.refs(id) == 0 {
			os.Remove(filepath.Join(p.backing, "data", e.Name()))
		}
	}
	p.mu.Unlock()
	return p.mount()
}

// stats summarizes what the filesystem saw.
func (p *powercutFS) stats() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return fmt.Sprintf("%d file fsyncs, %d directory fsyncs, %d cuts losing %d unsynced pages and %d namespace operations",
		p.fsyncs, p.dirFsyncs, p.cuts, p.lostBytes/pcPage, p.lostOps)
}

func (p *powercutFS) newID() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.nextID++
	return p.nextID
}

func (p *powercutFS) record(o nsOp) {
	p.mu.Lock()
	p.pending = append(p.pending, o)
	p.mu.Unlock()
}

// commit makes the journal durable up to the last operation involving id.
func (p *powercutFS) commit(id uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	last := -1
	for i, o := range p.pending {
		if o.involves(id) {
			last = i
		}
	}
	for _, o := range p.pending[:last+1] {
		p.durable.apply(o)
	}
	p.pending = p.pending[last+1:]
}

func (p *powercutFS) statfs(out *fuse.StatfsOut) syscall.Errno {
	var st syscall.Statfs_t
	if err := syscall.Statfs(p.backing, &st); err != nil {
		return fs.ToErrno(err)
	}
	out.FromStatfsT(&st)
	return 0
}

// pcDir is a directory.
type pcDir struct {
	fs.Inode
	pfs  *powercutFS
	id   uint64
	mode uint32
}

var (
	_ fs.NodeCreater   = (*pcDir)(nil)
	_ fs.NodeMkdirer   = (*pcDir)(nil)
	_ fs.NodeUnlinker  = (*pcDir)(nil)
	_ fs.NodeRmdirer   = (*pcDir)(nil)
	_ fs.NodeRenamer   = (*pcDir)(nil)
	_ fs.NodeLinker    = (*pcDir)(nil)
	_ fs.NodeFsyncer   = (*pcDir)(nil)
	_ fs.NodeGetattrer = (*pcDir)(nil)
	_ fs.NodeSetattrer = (*pcDir)(nil)
	_ fs.NodeStatfser  = (*pcDir)(nil)
)

func (d *pcDir) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	return d.pfs.statfs(out)
}

func (d *pcDir) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = syscall.S_IFDIR | d.mode
	out.Nlink = 2
	out.Ino = d.id
	return 0
}

func (d *pcDir) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if m, ok := in.GetMode(); ok {
		d.mode = m & 0o7777
	}
	return d.Getattr(ctx, f, out)
}

func (d *pcDir) Fsync(ctx context.Context, f fs.FileHandle, flags uint32) syscall.Errno {
	d.pfs.mu.Lock()
	d.pfs.dirFsyncs++
	d.pfs.mu.Unlock()
	d.pfs.commit(d.id)
	return 0
}

func (d *pcDir) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	if d.GetChild(name) != nil {
		return nil, nil, 0, syscall.EEXIST
	}
	id := d.pfs.newID()
	f := &pcFile{pfs: d.pfs, id: id, mode: mode & 0o7777, nlink: 1, mtime: time.Now()}
	in := d.NewPersistentInode(ctx, f, fs.StableAttr{Mode: syscall.S_IFREG, Ino: id})
	d.pfs.mu.Lock()
	d.pfs.live[id] = f
	d.pfs.pending = append(d.pfs.pending, nsOp{kind: nsCreate, dir: d.id, name: name, id: id, mode: f.mode})
	d.pfs.mu.Unlock()
	f.attr(&out.Attr)
	return in, nil, 0, 0
}

func (d *pcDir) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if d.GetChild(name) != nil {
		return nil, syscall.EEXIST
	}
	id := d.pfs.newID()
	nd := &pcDir{pfs: d.pfs, id: id, mode: mode & 0o7777}
	in := d.NewPersistentInode(ctx, nd, fs.StableAttr{Mode: syscall.S_IFDIR, Ino: id})
	d.pfs.record(nsOp{kind: nsMkdir, dir: d.id, name: name, id: id, mode: nd.mode})
	out.Attr.Mode = syscall.S_IFDIR | nd.mode
	out.Attr.Nlink = 2
	out.Attr.Ino = id
	return in, 0
}

func idOf(in *fs.Inode) uint64 {
	switch n := in.Operations().(type) {
	case *pcFile:
		return n.id
	case *pcDir:
		return n.id
	}
	return 0
}

func (d *pcDir) Unlink(ctx context.Context, name string) syscall.Errno {
	ch := d.GetChild(name)
	if ch == nil {
		return syscall.ENOENT
	}
	f, ok := ch.Operations().(*pcFile)
	if !ok {
		return syscall.EISDIR
	}
	f.mu.Lock()
	f.nlink--
	f.mu.Unlock()
	d.pfs.record(nsOp{kind: nsUnlink, dir: d.id, name: name, id: f.id})
	return 0
}

func (d *pcDir) Rmdir(ctx context.Context, name string) syscall.Errno {
	ch := d.GetChild(name)
	if ch == nil {
		return syscall.ENOENT
	}
	if !ch.IsDir() {
		return syscall.ENOTDIR
	}
	if len(ch.Children()) > 0 {
		return syscall.ENOTEMPTY
	}
	d.pfs.record(nsOp{kind: nsUnlink, dir: d.id, name: name, id: idOf(ch)})
	return 0
}

func (d *pcDir) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	np, ok := newParent.(*pcDir)
	if !ok {
		return syscall.EXDEV
	}
	if flags&^uint32(pcRenameNoReplace) != 0 {
		return syscall.EINVAL // RENAME_EXCHANGE, RENAME_WHITEOUT
	}
	ch := d.GetChild(name)
	if ch == nil {
		return syscall.ENOENT
	}
	if old := np.GetChild(newName); old != nil {
		if flags&pcRenameNoReplace != 0 {
			return syscall.EEXIST
		}
		if old == ch {
			return 0
		}
		switch {
		case ch.IsDir() && !old.IsDir():
			return syscall.ENOTDIR
		case !ch.IsDir() && old.IsDir():
			return syscall.EISDIR
		case old.IsDir() && len(old.Children()) > 0:
			return syscall.ENOTEMPTY
		}
		if of, ok := old.Operations().(*pcFile); ok {
			of.mu.Lock()
			of.nlink--
			of.mu.Unlock()
		}
	}
	d.pfs.record(nsOp{kind: nsRename, dir: d.id, name: name, newDir: np.id, newNam: newName, id: idOf(ch)})
	return 0
}

func (d *pcDir) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	f, ok := target.(*pcFile)
	if !ok {
		return nil, syscall.EPERM
	}
	if d.GetChild(name) != nil {
		return nil, syscall.EEXIST
	}
	f.mu.Lock()
	f.nlink++
	f.mu.Unlock()
	d.pfs.record(nsOp{kind: nsLink, dir: d.id, name: name, id: f.id})
	f.attr(&out.Attr)
	return f.EmbeddedInode(), 0
}

// pcFile is a regular file: its durable content is in data/<id> of the
// backing directory (dsize bytes), and the pages written since the last
// fsync are in dirty. Bytes at zeroFrom and past it that no dirty page
// holds read as zeros (a truncate cut the durable content there).
type pcFile struct {
	fs.Inode
	pfs *powercutFS
	id  uint64

	mu       sync.Mutex
	mode     uint32
	nlink    uint32
	mtime    time.Time
	size     int64
	dsize    int64
	zeroFrom int64
	dirty    map[int64][]byte
	backing  *os.File
}

var (
	_ fs.NodeOpener    = (*pcFile)(nil)
	_ fs.NodeReader    = (*pcFile)(nil)
	_ fs.NodeWriter    = (*pcFile)(nil)
	_ fs.NodeFsyncer   = (*pcFile)(nil)
	_ fs.NodeGetattrer = (*pcFile)(nil)
	_ fs.NodeSetattrer = (*pcFile)(nil)
	_ fs.NodeAllocater = (*pcFile)(nil)
	_ fs.NodeStatfser  = (*pcFile)(nil)
)

func (f *pcFile) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	return f.pfs.statfs(out)
}

// attr fills out; f.mu must not be held.
func (f *pcFile) attr(out *fuse.Attr) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.attrLocked(out)
}

func (f *pcFile) attrLocked(out *fuse.Attr) {
	out.Mode = syscall.S_IFREG | f.mode
	out.Size = uint64(f.size)
	out.Blocks = (uint64(f.size) + 511) / 512
	out.Blksize = pcPage
	out.Nlink = f.nlink
	out.Ino = f.id
	out.SetTimes(nil, &f.mtime, &f.mtime)
}

func (f *pcFile) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	f.attr(&out.Attr)
	return 0
}

func (f *pcFile) Setattr(ctx context.Context, fh fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	f.mu.Lock()
	defer f.mu.Unlock()
	if m, ok := in.GetMode(); ok {
		f.mode = m & 0o7777
	}
	if sz, ok := in.GetSize(); ok {
		f.truncateLocked(int64(sz))
	}
	if mt, ok := in.GetMTime(); ok {
		f.mtime = mt
	}
	f.attrLocked(&out.Attr)
	return 0
}

func (f *pcFile) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if flags&syscall.O_TRUNC != 0 {
		f.mu.Lock()
		f.truncateLocked(0)
		f.mu.Unlock()
	}
	return nil, 0, 0
}

func (f *pcFile) truncateLocked(sz int64) {
	if sz < f.size {
		for pg := range f.dirty {
			if pg*pcPage >= sz {
				delete(f.dirty, pg)
			}
		}
		if b, ok := f.dirty[sz/pcPage]; ok {
			clear(b[sz%pcPage:])
		}
		f.zeroFrom = min(f.zeroFrom, sz)
	}
	f.size = sz
	f.mtime = time.Now()
}

func (f *pcFile) openBacking() (*os.File, error) {
	if f.backing == nil {
		b, err := os.OpenFile(f.pfs.dataPath(f.id), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, err
		}
		f.backing = b
	}
	return f.backing, nil
}

func (f *pcFile) closeBacking() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.backing != nil {
		f.backing.Close()
		f.backing = nil
	}
}

// base reads the durable bytes at off into b (zeros past what survives).
func (f *pcFile) baseLocked(b []byte, off int64) error {
	clear(b)
	end := min(f.zeroFrom, f.dsize)
	if off >= end {
		return nil
	}
	n := min(int64(len(b)), end-off)
	bf, err := f.openBacking()
	if err != nil {
		return err
	}
	if _, err := bf.ReadAt(b[:n], off); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

func (f *pcFile) Read(ctx context.Context, fh fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if off >= f.size {
		return fuse.ReadResultData(nil), 0
	}
	n := min(int64(len(dest)), f.size-off)
	out := dest[:n]
	for done := int64(0); done < n; {
		pos := off + done
		pg, in := pos/pcPage, pos%pcPage
		chunk := min(pcPage-in, n-done)
		if b, ok := f.dirty[pg]; ok {
			copy(out[done:done+chunk], b[in:in+chunk])
		} else if err := f.baseLocked(out[done:done+chunk], pos); err != nil {
			return nil, fs.ToErrno(err)
		}
		done += chunk
	}
	return fuse.ReadResultData(out), 0
}

func (f *pcFile) Write(ctx context.Context, fh fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dirty == nil {
		f.dirty = map[int64][]byte{}
	}
	n := int64(len(data))
	for done := int64(0); done < n; {
		pos := off + done
		pg, in := pos/pcPage, pos%pcPage
		chunk := min(pcPage-in, n-done)
		b, ok := f.dirty[pg]
		if !ok {
			b = make([]byte, pcPage)
			if chunk < pcPage {
				if err := f.baseLocked(b, pg*pcPage); err != nil {
					return 0, fs.ToErrno(err)
				}
				// Bytes past the live size read as zeros.
				if f.size < (pg+1)*pcPage {
					clear(b[max(0, f.size-pg*pcPage):])
				}
			}
			f.dirty[pg] = b
		}
		copy(b[in:in+chunk], data[done:done+chunk])
		done += chunk
	}
	f.size = max(f.size, off+n)
	f.mtime = time.Now()
	return uint32(n), 0
}

func (f *pcFile) Allocate(ctx context.Context, fh fs.FileHandle, off uint64, size uint64, mode uint32) syscall.Errno {
	const keepSize = 1 // FALLOC_FL_KEEP_SIZE
	if mode&^keepSize != 0 {
		return syscall.EOPNOTSUPP
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if mode == 0 && int64(off+size) > f.size {
		f.size = int64(off + size)
	}
	return 0
}

// Fsync makes the file's content durable (fsync and fdatasync alike), and
// the namespace operations that created, linked or moved it.
func (f *pcFile) Fsync(ctx context.Context, fh fs.FileHandle, flags uint32) syscall.Errno {
	if err := f.sync(); err != nil {
		return fs.ToErrno(err)
	}
	f.pfs.mu.Lock()
	f.pfs.fsyncs++
	f.pfs.mu.Unlock()
	f.pfs.commit(f.id)
	return 0
}

func (f *pcFile) sync() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.dirty) == 0 && f.zeroFrom == f.dsize && f.size == f.dsize {
		return nil
	}
	bf, err := f.openBacking()
	if err != nil {
		return err
	}
	if f.zeroFrom < f.dsize {
		if err := bf.Truncate(f.zeroFrom); err != nil {
			return err
		}
	}
	pages := make([]int64, 0, len(f.dirty))
	for pg := range f.dirty {
		pages = append(pages, pg)
	}
	sort.Slice(pages, func(i, j int) bool { return pages[i] < pages[j] })
	for _, pg := range pages {
		if _, err := bf.WriteAt(f.dirty[pg], pg*pcPage); err != nil {
			return err
		}
	}
	if err := bf.Truncate(f.size); err != nil {
		return err
	}
	f.dirty = nil
	f.dsize, f.zeroFrom = f.size, f.size
	return nil
}
