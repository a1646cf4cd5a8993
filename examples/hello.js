// A JavaScript cell: top-level await, and the value of the last expression is the result.
const days = [
  { day: 'Mon', visitors: 120 },
  { day: 'Tue', visitors: 340 },
  { day: 'Wed', visitors: 95 },
];
const busiest = days.reduce((best, day) => (day.visitors > best.visitors ? day : best));
await new Promise((resolve) => setTimeout(resolve, 10));
console.log(`busiest day: ${busiest.day} (${busiest.visitors} visitors)`);
days.map((day) => day.visitors).reduce((sum, count) => sum + count, 0);
