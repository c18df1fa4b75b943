/**
 * rate-limiter-flexible reads the system clock (`Date.now()`), not the service's injected clock:
 * a test that waits out a quota window moves `Date.now()` forward instead of sleeping. The shift
 * is undone after each test of the file that calls this.
 */
export function shiftableSystemTime(): { advance(milliseconds: number): void } {
  let offset = 0;
  const realNow = Date.now.bind(Date);
  beforeEach(() => {
    offset = 0;
    jest.spyOn(Date, 'now').mockImplementation(() => realNow() + offset);
  });
  afterEach(() => {
    jest.restoreAllMocks();
  });
  return {
    advance(milliseconds) {
      offset += milliseconds;
    },
  };
}
