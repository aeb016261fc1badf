#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Copies perf.data $1 to $2 with its event attributes cut to the 128 bytes
# perf 6.1 knows, when the bytes past them are all zero (a newer perf wrote
# them; 6.1 refuses such a file as "incompatible file format").  Exit 1 when
# there is nothing to cut or the extra bytes are not zero.  The attribute
# section is rewritten in place, shorter; every other offset stays.
import struct, sys
d = bytearray(open(sys.argv[1], 'rb').read())
asz, aoff, asize = struct.unpack_from('<QQQ', d, 16)
n = asize // asz
if asz == 144 or any(d[aoff + i*asz + 128:aoff + i*asz + asz - 16].strip(b'\0') for i in range(n)):
    sys.exit(1)
ents = [d[aoff + i*asz:aoff + (i+1)*asz] for i in range(n)]
out = b''
for e in ents:
    e = bytearray(e[:128] + e[asz-16:])
    struct.pack_into('<I', e, 4, 128)
    out += e
d[aoff:aoff + len(out)] = out
struct.pack_into('<QQQ', d, 16, 144, aoff, len(out))
open(sys.argv[2], 'wb').write(d)
