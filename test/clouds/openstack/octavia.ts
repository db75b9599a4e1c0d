import { HttpError } from './http-error.js';

/** Octavia load balancers and Neutron floating IPs of the simulator. */
export class OctaviaState {
  neutron(method: string, path: string, _url: URL, _body: unknown): [number, unknown] {
    throw new HttpError(404, {
      NeutronError: { type: 'HTTPNotFound', message: `no route ${method} ${path}`, detail: '' },
    });
  }

  route(method: string, path: string, _url: URL, _body: unknown): [number, unknown] {
    throw new HttpError(404, {
      faultcode: 'Client',
      faultstring: `no route ${method} ${path}`,
      debuginfo: null,
    });
  }
}
