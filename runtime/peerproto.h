/* SPDX-License-Identifier: MIT */
/*
 * peerproto: the words of the protocol between ranks (call.c and
 * future.c ask, serve.c answers), in one place, as regproto.h holds the
 * registry's: after the handshake (greet.h) a peer sends
 * {op: call, id, kind, group, key, args?, rref?} and is answered
 * {id, result: {value}} or an error. It holds no code.
 */
#ifndef WR_PEERPROTO_H
#define WR_PEERPROTO_H

#define WR_PEER_OP_CALL "call"

/* What a call asks for, its "kind". */
#define WR_PEER_SERVICE "service"             /* run a group's service */
#define WR_PEER_DIRECT "direct"               /* run a member's direct handler */
#define WR_PEER_REMOTE "remote"               /* a service, its result kept (rref) */
#define WR_PEER_DIRECT_REMOTE "direct_remote" /* a direct one, its result kept */
#define WR_PEER_VALUE "value"                 /* read a paired value */
#define WR_PEER_FETCH "fetch"                 /* a kept result, by rref */
#define WR_PEER_RELEASE "release"             /* forget a kept result */

#endif
