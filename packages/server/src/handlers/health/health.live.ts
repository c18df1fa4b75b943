import type { Handler } from '../../http/handler';

/** `health.live`: GET /livez: answering at all is the proof that the event loop runs. */
const healthLive: Handler<'health.live'> = async () => ({ status: 200, body: { status: 'ok' } });

export default healthLive;
