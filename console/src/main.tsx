// The console's entry: sign-in when no key is held, otherwise the sidebar and the routed page.
import '@picocss/pico/css/pico.min.css';
import './style.css';
import { render } from 'preact';
import { useEffect } from 'preact/hooks';
import { ErrorBoundary, LocationProvider, Route, Router, useLocation } from 'preact-iso';
import { apiKey } from './session';
import { ROUTES } from './routes';
import { Layout } from './ui/layout';
import { SignIn } from './pages/sign-in';

function Redirect({ to }: { to: string }) {
  const { route } = useLocation();
  useEffect(() => route(to, true), [to]);
  return null;
}

function NotFound() {
  return (
    <section>
      <h1>Not found</h1>
      <p>
        No page at this address. <a href="/devboxes">Go to your devboxes</a>.
      </p>
    </section>
  );
}

function App() {
  if (!apiKey.value) return <SignIn />;
  return (
    <LocationProvider>
      <Layout>
        <ErrorBoundary>
          <Router>
            <Route path="/" component={() => <Redirect to="/devboxes" />} />
            {ROUTES.map((r) => (
              <Route key={r.path} path={r.path} component={r.component} />
            ))}
            <Route default component={NotFound} />
          </Router>
        </ErrorBoundary>
      </Layout>
    </LocationProvider>
  );
}

render(<App />, document.getElementById('app')!);
