import { dateOfDayNumber, dayNumberOf } from '../../src/core/instants';

describe('calendar days', () => {
  it.each([
    ['1970-01-01', 0],
    ['1970-01-02', 1],
    ['1969-12-31', -1],
    ['2024-02-29', 19_782],
    ['2026-11-22', 20_779],
  ])('reads %s as day %i and writes it back', (date, dayNumber) => {
    expect(dayNumberOf(date)).toBe(dayNumber);
    expect(dateOfDayNumber(dayNumber)).toBe(date);
  });

  it.each(['0000-01-01', '0001-01-01', '0050-06-15', '0099-12-31', '1900-02-28', '9999-12-31'])(
    'writes %s back as it read it (years below 100 too)',
    (date) => {
      const dayNumber = dayNumberOf(date);
      expect(dayNumber).toEqual(expect.any(Number));
      expect(dateOfDayNumber(dayNumber as number)).toBe(date);
    },
  );

  it('counts the days between two dates across a leap day', () => {
    expect((dayNumberOf('2025-02-28') as number) - (dayNumberOf('2024-02-28') as number)).toBe(366);
    expect((dayNumberOf('2026-02-28') as number) - (dayNumberOf('2025-02-28') as number)).toBe(365);
  });

  it.each([
    '2026-02-30',
    '2025-02-29',
    '1900-02-29',
    '2026-13-01',
    '2026-00-10',
    '2026-11-00',
    '2026-04-31',
    '2026-11-1',
    '20261122',
    '2026-11-22T00:00:00Z',
    ' 2026-11-22',
    '',
  ])('refuses %j: not a calendar day that exists', (text) => {
    expect(dayNumberOf(text)).toBeUndefined();
  });
});
