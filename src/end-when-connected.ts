import type { ClientRequest } from 'node:http';
import type { Socket } from 'node:net';

/**
 * Sends a request (node:http sends nothing, headers included, before `end`) once its connection is
 * up, and asks `refusal` again at that moment: a write gate asked only before the request would let
 * a replica that lost its Lease while a new connection was being made (an API server restarting, a
 * SYN retransmitted, the process frozen mid-handshake) still write. A refusal destroys the request
 * with the refusal's error, unsent.
 */
export function endWhenConnected(
  req: ClientRequest,
  body: string | undefined,
  refusal?: () => Error | undefined,
): void {
  if (!refusal) {
    req.end(body);
    return;
  }
  req.once('socket', (socket: Socket) => {
    const go = () => {
      const refused = refusal();
      if (refused) req.destroy(refused);
      else req.end(body);
    };
    if (req.reusedSocket || isUp(socket)) go();
    else socket.once(isTls(socket) ? 'secureConnect' : 'connect', go);
  });
}

function isTls(socket: Socket): boolean {
  return (socket as Socket & { encrypted?: boolean }).encrypted === true;
}

/** Connected, and for TLS past the handshake (node:tls marks it on the socket, it has no public getter). */
function isUp(socket: Socket): boolean {
  if (socket.connecting) return false;
  return !isTls(socket) || (socket as Socket & { _secureEstablished?: boolean })._secureEstablished === true;
}
