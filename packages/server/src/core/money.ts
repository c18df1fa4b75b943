/** Money is integer halalas in storage and a `"0.00"` SAR string in the API (two decimals, no float maths). */
export const MONEY_PATTERN = /^(0|[1-9][0-9]{0,8})\.[0-9]{2}$/;

export function toHalalas(amount: string): number {
  if (!MONEY_PATTERN.test(amount)) throw new Error(`"${amount}" is not a money amount`);
  const [riyals = '0', halalas = '00'] = amount.split('.');
  return Number(riyals) * 100 + Number(halalas);
}

export function fromHalalas(halalas: number): string {
  if (!Number.isSafeInteger(halalas) || halalas < 0) throw new Error(`${halalas} is not an amount of halalas`);
  return `${Math.floor(halalas / 100)}.${String(halalas % 100).padStart(2, '0')}`;
}
