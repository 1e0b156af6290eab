// PLACEHOLDER: replaced before landing
export default function Placeholder() {
  return <p>Not built yet: scenarios</p>;
}
